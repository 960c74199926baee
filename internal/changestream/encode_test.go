package changestream

import (
	"bytes"
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

// TestPlainDeleteEncoding: a delete encoded straight from the change is
// byte for byte the event eventDoc builds and bsonutil.Marshal encodes, for
// _ids of several types, carried as BSON or key-encoded, with and
// without the expired and evicted markers.
func TestPlainDeleteEncoding(t *testing.T) {
	c := &Stream{spec: &Spec{FullDocument: "default", Before: "off"}}
	ids := []any{int32(7), "a", 1.5, bson.NewObjectID(), bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: bson.A{int64(2), "x"}}},
		bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{9}, 16)}, bson.DateTime(1234), nil, true}
	marks := []func(*Event){
		func(*Event) {},
		func(e *Event) {
			e.Expired = &Expiry{Index: "at_1", AfterSecs: 30, AtMillis: 1_700_000_000_123}
		},
		func(e *Event) { e.Evicted = &Eviction{Index: "lru"} },
	}
	pos := Position{TS: Timestamp{T: 1_700_000_000, I: 3}, Index: 41}
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
				ev := &Event{Op: OpDelete, DB: "db", Coll: "c"}
				if byKey {
					ev.ID = keyenc.AppendValue(nil, id)
				} else {
					ev.RawID = append([]byte{byte(t0)}, data...)
				}
				mark(ev)
				if !c.plainDelete(ev) {
					t.Fatalf("%v: not a plain delete", ev)
				}
				checkPlainEncoding(t, c, Record{Pos: pos, WallMillis: 1_700_000_000_456, Event: ev}, plainDeleteEvent)
			}
		}
	}
	withPre := &Stream{spec: &Spec{FullDocument: "default", Before: "whenAvailable"}}
	if withPre.plainDelete(&Event{Op: OpDelete}) || c.plainDelete(&Event{Op: OpInsert}) {
		t.Fatal("a delete with pre-images or an insert taken as a plain delete")
	}
}

// BenchmarkStreamExpiryEvent: one TTL deletion turned into the event of a
// stream keeping expiries ($match: {expired: {$exists: true}}), through
// the pipeline as before against pushed down and encoded straight from
// the change.
func BenchmarkStreamExpiryEvent(b *testing.B) {
	st := newTestStreams()
	call := &Call{Ctx: context.Background(), Env: testEnv{}}
	stages := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}}}}}
	ev := &Event{Op: OpDelete, DB: "db", Coll: "c", ID: keyenc.AppendValue(nil, int64(123456)),
		Expired: &Expiry{Index: "expiresAt_1", AtMillis: 1_700_000_000_000}}
	rec := Record{Pos: Position{TS: Timestamp{T: 1_700_000_000, I: 1}}, WallMillis: 1_700_000_000_005, Event: ev}
	run := func(b *testing.B, spec *Spec) {
		c := &Stream{streams: st, spec: spec}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rec.Pos.Index = uint32(i)
			out, err := c.encodedEvents(call, rec)
			if err != nil || len(out) != 1 {
				b.Fatalf("%d events, %v", len(out), err)
			}
		}
	}
	base := Spec{Scope: Scope{DB: "db", Coll: "c"}, FullDocument: "default", Before: "off"}
	b.Run("pipeline", func(b *testing.B) {
		p, err := aggregate.Parse(stages, aggregate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		spec := base
		spec.Pipeline = p
		run(b, &spec)
	})
	b.Run("pushedDown", func(b *testing.B) {
		p, err := aggregate.Parse(stages, aggregate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		spec := base
		spec.Match, spec.Pipeline = PushDownMatch(p)
		if spec.Match == nil || spec.Pipeline != nil {
			b.Fatal("the $match was not pushed down")
		}
		run(b, &spec)
	})
}

// TestPlainWriteEncoding: inserts and updates encoded straight from the
// change are byte for byte the events eventDoc builds and bsonutil.Marshal
// encodes, for _ids of several types, an update's _id carried as BSON or
// key-encoded, its description with and without disambiguatedPaths.
func TestPlainWriteEncoding(t *testing.T) {
	c := &Stream{spec: &Spec{FullDocument: "default", Before: "off"}}
	ids := []any{int32(7), "a", 1.5, bson.NewObjectID(), bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: bson.A{int64(2), "x"}}},
		bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{9}, 16)}, bson.DateTime(1234), nil, true}
	descs := []bson.D{
		{{Key: "updatedFields", Value: bson.D{{Key: "accessTime", Value: bson.DateTime(99)}}}, {Key: "removedFields", Value: bson.A{}}, {Key: "truncatedArrays", Value: bson.A{}}},
		{{Key: "updatedFields", Value: bson.D{{Key: "a.0", Value: int32(1)}}}, {Key: "removedFields", Value: bson.A{"b"}}, {Key: "truncatedArrays", Value: bson.A{}},
			{Key: DisambiguatedPaths, Value: bson.D{{Key: "a.0", Value: bson.A{"a", "0"}}}}},
	}
	pos := Position{TS: Timestamp{T: 1_700_000_000, I: 3}, Index: 41}
	var evs []*Event
	for _, id := range ids {
		doc := mustMarshalD(t, bson.D{{Key: "_id", Value: id}, {Key: "token", Value: "t"}, {Key: "n", Value: int64(3)}})
		evs = append(evs, &Event{Op: OpInsert, DB: "db", Coll: "c", Doc: doc})
		t0, data := bson.TypeNull, []byte(nil)
		if id != nil {
			var err error
			if t0, data, err = bson.MarshalValue(id); err != nil {
				t.Fatal(err)
			}
		}
		for _, desc := range descs {
			upd := mustMarshalD(t, desc)
			evs = append(evs, &Event{Op: OpUpdate, DB: "db", Coll: "c", Update: upd, RawID: append([]byte{byte(t0)}, data...)},
				&Event{Op: OpUpdate, DB: "db", Coll: "c", Update: upd, ID: keyenc.AppendValue(nil, id)})
		}
	}
	for _, ev := range evs {
		if !c.plainWrite(ev) {
			t.Fatalf("%v: not a plain write", ev)
		}
		checkPlainEncoding(t, c, Record{Pos: pos, WallMillis: 1_700_000_000_456, Event: ev}, plainWriteEvent)
	}
	upd := &Event{Op: OpUpdate, Update: []byte{5, 0, 0, 0, 0}, RawID: []byte{0x10, 1, 0, 0, 0}}
	for _, tc := range []struct {
		spec *Spec
		ev   *Event
	}{
		{&Spec{FullDocument: "updateLookup", Before: "off"}, upd},
		{&Spec{FullDocument: "whenAvailable", Before: "off"}, upd},
		{&Spec{FullDocument: "default", Before: "whenAvailable"}, upd},
		{&Spec{FullDocument: "default", Before: "off", Expanded: true}, upd},
		{c.spec, &Event{Op: OpUpdate, Update: upd.Update, RawID: upd.RawID, Doc: []byte{5, 0, 0, 0, 0}}},
		{c.spec, &Event{Op: OpUpdate, Update: upd.Update, RawID: upd.RawID, Elements: &ElementExpiry{Index: "x"}}},
		{c.spec, &Event{Op: OpReplace, Doc: []byte{5, 0, 0, 0, 0}, RawID: upd.RawID}},
	} {
		if (&Stream{spec: tc.spec}).plainWrite(tc.ev) {
			t.Errorf("%+v with %+v taken as a plain write", tc.ev, tc.spec)
		}
	}
}

// checkPlainEncoding fails t unless encode gives, byte for byte, what
// eventDoc builds for rec and bsonutil.Marshal encodes.
func checkPlainEncoding(t *testing.T, c *Stream, rec Record, encode func(Record) ([]byte, error)) {
	t.Helper()
	got, err := encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.eventDoc(rec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := bsonutil.Marshal(doc)
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
	ev := &Event{Op: OpUpdate, DB: "bench", Coll: "sessions", Update: raw, RawID: append([]byte{byte(t0)}, id...)}
	rec := Record{Pos: Position{TS: Timestamp{T: 1_700_000_000, I: 1}}, WallMillis: 1_700_000_000_005, Event: ev}
	c := &Stream{spec: &Spec{FullDocument: "default", Before: "off"}}
	b.Run("document", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := c.eventDoc(rec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := bsonutil.Marshal(d); err != nil {
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
