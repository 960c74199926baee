package commands

import (
	"bytes"
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

// TestPlainDeleteEncoding: a delete encoded straight from the change is
// byte for byte the event eventDoc builds and encodeResult encodes, for
// _ids of several types, carried as BSON or key-encoded, with and
// without the expired and evicted markers.
func TestPlainDeleteEncoding(t *testing.T) {
	c := &streamCursor{spec: &streamSpec{fullDocument: "default", before: "off"}}
	ids := []any{int32(7), "a", 1.5, bson.NewObjectID(), bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: bson.A{int64(2), "x"}}},
		bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{9}, 16)}, bson.DateTime(1234), nil, true}
	marks := []func(*changestream.Event){
		func(*changestream.Event) {},
		func(e *changestream.Event) {
			e.Expired = &changestream.Expiry{Index: "at_1", AfterSecs: 30, AtMillis: 1_700_000_000_123}
		},
		func(e *changestream.Event) { e.Evicted = &changestream.Eviction{Index: "lru"} },
	}
	pos := changestream.Position{TS: changestream.Timestamp{T: 1_700_000_000, I: 3}, Index: 41}
	for _, id := range ids {
		t0, data := bson.TypeNull, []byte(nil)
		if id != nil {
			var err error
			if t0, data, err = bson.MarshalValue(id); err != nil {
				t.Fatal(err)
			}
		}
		for _, byKey := range []bool{false, true} {
			for _, mark := range marks {
				ev := &changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c"}
				if byKey {
					ev.ID = keyenc.AppendValue(nil, id)
				} else {
					ev.RawID = append([]byte{byte(t0)}, data...)
				}
				mark(ev)
				rec := changestream.Record{Pos: pos, WallMillis: 1_700_000_000_456, Event: ev}
				if !c.plainDelete(ev) {
					t.Fatalf("%v: not a plain delete", ev)
				}
				got, err := plainDeleteEvent(rec)
				if err != nil {
					t.Fatal(err)
				}
				doc, err := c.eventDoc(rec)
				if err != nil {
					t.Fatal(err)
				}
				want, err := encodeResult(doc)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("_id %v (key-encoded %v):\n got %v\nwant %v", id, byKey, bson.Raw(got), bson.Raw(want))
				}
			}
		}
	}
	withPre := &streamCursor{spec: &streamSpec{fullDocument: "default", before: "whenAvailable"}}
	if withPre.plainDelete(&changestream.Event{Op: changestream.OpDelete}) || c.plainDelete(&changestream.Event{Op: changestream.OpInsert}) {
		t.Fatal("a delete with pre-images or an insert taken as a plain delete")
	}
}

// BenchmarkStreamExpiryEvent: one TTL deletion turned into the event of a
// stream keeping expiries ($match: {expired: {$exists: true}}), through
// the pipeline as before against pushed down and encoded straight from
// the change.
func BenchmarkStreamExpiryEvent(b *testing.B) {
	h := newStreamHandler(b)
	r := &request{ctx: context.Background(), db: "db", name: "getMore"}
	stages := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}}}}}
	ev := &changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c", ID: keyenc.AppendValue(nil, int64(123456)),
		Expired: &changestream.Expiry{Index: "expiresAt_1", AtMillis: 1_700_000_000_000}}
	rec := changestream.Record{Pos: changestream.Position{TS: changestream.Timestamp{T: 1_700_000_000, I: 1}}, WallMillis: 1_700_000_000_005, Event: ev}
	run := func(b *testing.B, spec *streamSpec) {
		c := &streamCursor{h: h, spec: spec}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rec.Pos.Index = uint32(i)
			out, err := c.encodedEvents(r, rec)
			if err != nil || len(out) != 1 {
				b.Fatalf("%d events, %v", len(out), err)
			}
		}
	}
	base := streamSpec{scope: streamScope{db: "db", coll: "c"}, fullDocument: "default", before: "off"}
	b.Run("pipeline", func(b *testing.B) {
		p, err := aggregate.Parse(stages, aggregate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		spec := base
		spec.pipeline = p
		run(b, &spec)
	})
	b.Run("pushedDown", func(b *testing.B) {
		p, err := aggregate.Parse(stages, aggregate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		spec := base
		spec.match, spec.pipeline = pushDownMatch(p)
		if spec.match == nil || spec.pipeline != nil {
			b.Fatal("the $match was not pushed down")
		}
		run(b, &spec)
	})
}
