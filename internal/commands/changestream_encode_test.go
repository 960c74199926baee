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
				if !c.plainDelete(ev) {
					t.Fatalf("%v: not a plain delete", ev)
				}
				checkPlainEncoding(t, c, changestream.Record{Pos: pos, WallMillis: 1_700_000_000_456, Event: ev}, plainDeleteEvent)
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

// TestPlainWriteEncoding: inserts and updates encoded straight from the
// change are byte for byte the events eventDoc builds and encodeResult
// encodes, for _ids of several types, an update's _id carried as BSON or
// key-encoded, its description with and without disambiguatedPaths.
func TestPlainWriteEncoding(t *testing.T) {
	c := &streamCursor{spec: &streamSpec{fullDocument: "default", before: "off"}}
	ids := []any{int32(7), "a", 1.5, bson.NewObjectID(), bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: bson.A{int64(2), "x"}}},
		bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{9}, 16)}, bson.DateTime(1234), nil, true}
	descs := []bson.D{
		{{Key: "updatedFields", Value: bson.D{{Key: "accessTime", Value: bson.DateTime(99)}}}, {Key: "removedFields", Value: bson.A{}}, {Key: "truncatedArrays", Value: bson.A{}}},
		{{Key: "updatedFields", Value: bson.D{{Key: "a.0", Value: int32(1)}}}, {Key: "removedFields", Value: bson.A{"b"}}, {Key: "truncatedArrays", Value: bson.A{}},
			{Key: changestream.DisambiguatedPaths, Value: bson.D{{Key: "a.0", Value: bson.A{"a", "0"}}}}},
	}
	pos := changestream.Position{TS: changestream.Timestamp{T: 1_700_000_000, I: 3}, Index: 41}
	var evs []*changestream.Event
	for _, id := range ids {
		doc := mustMarshalD(t, bson.D{{Key: "_id", Value: id}, {Key: "token", Value: "t"}, {Key: "n", Value: int64(3)}})
		evs = append(evs, &changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "c", Doc: doc})
		t0, data := bson.TypeNull, []byte(nil)
		if id != nil {
			var err error
			if t0, data, err = bson.MarshalValue(id); err != nil {
				t.Fatal(err)
			}
		}
		for _, desc := range descs {
			upd := mustMarshalD(t, desc)
			evs = append(evs, &changestream.Event{Op: changestream.OpUpdate, DB: "db", Coll: "c", Update: upd, RawID: append([]byte{byte(t0)}, data...)},
				&changestream.Event{Op: changestream.OpUpdate, DB: "db", Coll: "c", Update: upd, ID: keyenc.AppendValue(nil, id)})
		}
	}
	for _, ev := range evs {
		if !c.plainWrite(ev) {
			t.Fatalf("%v: not a plain write", ev)
		}
		checkPlainEncoding(t, c, changestream.Record{Pos: pos, WallMillis: 1_700_000_000_456, Event: ev}, plainWriteEvent)
	}
	upd := &changestream.Event{Op: changestream.OpUpdate, Update: []byte{5, 0, 0, 0, 0}, RawID: []byte{0x10, 1, 0, 0, 0}}
	for _, tc := range []struct {
		spec *streamSpec
		ev   *changestream.Event
	}{
		{&streamSpec{fullDocument: "updateLookup", before: "off"}, upd},
		{&streamSpec{fullDocument: "whenAvailable", before: "off"}, upd},
		{&streamSpec{fullDocument: "default", before: "whenAvailable"}, upd},
		{&streamSpec{fullDocument: "default", before: "off", expanded: true}, upd},
		{c.spec, &changestream.Event{Op: changestream.OpUpdate, Update: upd.Update, RawID: upd.RawID, Doc: []byte{5, 0, 0, 0, 0}}},
		{c.spec, &changestream.Event{Op: changestream.OpUpdate, Update: upd.Update, RawID: upd.RawID, Elements: &changestream.ElementExpiry{Index: "x"}}},
		{c.spec, &changestream.Event{Op: changestream.OpReplace, Doc: []byte{5, 0, 0, 0, 0}, RawID: upd.RawID}},
	} {
		if (&streamCursor{spec: tc.spec}).plainWrite(tc.ev) {
			t.Errorf("%+v with %+v taken as a plain write", tc.ev, tc.spec)
		}
	}
}

// checkPlainEncoding fails t unless encode gives, byte for byte, what
// eventDoc builds for rec and encodeResult encodes.
func checkPlainEncoding(t *testing.T, c *streamCursor, rec changestream.Record, encode func(changestream.Record) ([]byte, error)) {
	t.Helper()
	got, err := encode(rec)
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
		t.Errorf("%v (_id %x, key-encoded %x):\n got %v\nwant %v", rec.Event.Op, rec.Event.RawID, rec.Event.ID, bson.Raw(got), bson.Raw(want))
	}
}

func mustMarshalD(t *testing.T, d bson.D) []byte {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// BenchmarkStreamUpdateEvent: a session's touch turned into a stream's
// update event, built as a document and marshalled against encoded
// straight from the change.
func BenchmarkStreamUpdateEvent(b *testing.B) {
	raw, err := bson.Marshal(bson.D{{Key: "updatedFields", Value: bson.D{{Key: "accessTime", Value: bson.DateTime(1_700_000_000_000)}}},
		{Key: "removedFields", Value: bson.A{}}, {Key: "truncatedArrays", Value: bson.A{}}})
	if err != nil {
		b.Fatal(err)
	}
	t0, id, _ := bson.MarshalValue(bson.NewObjectID())
	ev := &changestream.Event{Op: changestream.OpUpdate, DB: "bench", Coll: "sessions", Update: raw, RawID: append([]byte{byte(t0)}, id...)}
	rec := changestream.Record{Pos: changestream.Position{TS: changestream.Timestamp{T: 1_700_000_000, I: 1}}, WallMillis: 1_700_000_000_005, Event: ev}
	c := &streamCursor{spec: &streamSpec{fullDocument: "default", before: "off"}}
	b.Run("document", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := c.eventDoc(rec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := encodeResult(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := plainWriteEvent(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
