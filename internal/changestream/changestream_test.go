package changestream

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func TestEventRoundTrip(t *testing.T) {
	events := []Event{
		{Op: OpInsert, DB: "db", Coll: "c", Doc: []byte{5, 0, 0, 0, 0}},
		{Op: OpUpdate, DB: "db", Coll: "c", RawID: []byte{0x10, 1, 0, 0, 0}, Update: []byte{5, 0, 0, 0, 0}, Pre: []byte{5, 0, 0, 0, 0}},
		{Op: OpDelete, DB: "db", Coll: "c", ID: []byte{0x1c, 1}, Expired: &Expiry{Index: "at_1", AfterSecs: 30, AtMillis: -5}},
		{Op: OpRename, DB: "a", Coll: "b", ToDB: "a", ToColl: "d"},
		{Op: OpDropDatabase, DB: "a"},
		{Op: OpCreate, DB: "a", Coll: "b", UUID: bytes.Repeat([]byte{7}, 16), Desc: []byte{5, 0, 0, 0, 0}, NsType: NsCollection},
		{Op: OpModify, DB: "a", Coll: "b", UUID: bytes.Repeat([]byte{7}, 16), Desc: []byte{5, 0, 0, 0, 0}, Before: []byte{5, 0, 0, 0, 0}},
		{Op: OpDrop, DB: "a", Coll: "v", NsType: NsView},
		{Op: OpInsert, DB: "db", Coll: "c", Doc: []byte{5, 0, 0, 0, 0}, LSID: []byte{5, 0, 0, 0, 0}, TxnNumber: 7},
	}
	for _, ev := range events {
		got, err := Decode(ev.Encode(nil))
		if err != nil {
			t.Fatal(err)
		}
		if (got.Expired == nil) != (ev.Expired == nil) || got.Expired != nil && *got.Expired != *ev.Expired {
			t.Fatalf("expiry %+v came back as %+v", ev.Expired, got.Expired)
		}
		want := normalized(ev)
		got.Expired, want.Expired = nil, nil
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("round trip of %+v gave %+v", want, *got)
		}
	}
	for _, ev := range []Event{events[2], events[6], events[8]} {
		enc := ev.Encode(nil)
		for i := range enc {
			if _, err := Decode(enc[:i]); err == nil && i < len(enc) {
				t.Fatalf("a record cut to %d of %d bytes decoded", i, len(enc))
			}
		}
	}
}

// TestEventWithoutExtrasKeepsTheOldFormat: an event with none of the
// fields showExpandedEvents added encodes as before them (the records
// already in a log decode unchanged), and the DDL operations are the
// expanded ones.
func TestEventWithoutExtrasKeepsTheOldFormat(t *testing.T) {
	ev := Event{Op: OpDrop, DB: "a", Coll: "b"}
	enc := ev.Encode(nil)
	if enc[0] != byte(OpDrop) || enc[1] != 0 || len(enc) != 2+2+2+1 {
		t.Fatalf("plain drop encodes as %v", enc)
	}
	ev.UUID = bytes.Repeat([]byte{1}, 16)
	if enc := ev.Encode(nil); enc[0] != byte(OpDrop)|extFlags || enc[2] != hasUUID {
		t.Fatalf("drop with a uuid encodes as %v", enc)
	}
	for op := OpInsert; op <= OpModify; op++ {
		want := op == OpCreate || op == OpCreateIndexes || op == OpDropIndexes || op == OpModify
		if op.Expanded() != want || op.String() == "unknown" {
			t.Fatalf("%v: Expanded() = %v", op, op.Expanded())
		}
	}
	if !(&Event{NsType: NsTimeseries}).View() || (&Event{NsType: NsCollection}).View() {
		t.Fatal("View() is wrong")
	}
}

// normalized is ev as Decode returns it: empty byte fields come back
// empty but not nil where the format always writes them.
func normalized(ev Event) Event {
	if ev.ID == nil {
		ev.ID = []byte{}
	}
	return ev
}

func TestTokensSortAsPositions(t *testing.T) {
	positions := []Position{
		{TS: Timestamp{T: 1, I: 1}}, {TS: Timestamp{T: 1, I: 1}, Index: 3}, {TS: Timestamp{T: 1, I: 2}},
		HighWater(Timestamp{T: 1, I: 2}), {TS: Timestamp{T: 2}}, {TS: Timestamp{T: 1 << 31, I: 7}, Index: 1 << 20},
	}
	var tokens []string
	for _, p := range positions {
		tok := Token{Pos: p}.String()
		back, err := ParseToken(tok)
		if err != nil || back.Pos != p {
			t.Fatalf("token %s of %+v parsed as %+v, %v", tok, p, back, err)
		}
		tokens = append(tokens, tok)
	}
	if !sort.StringsAreSorted(tokens) {
		t.Fatalf("tokens do not sort as positions: %v", tokens)
	}
	for _, bad := range []string{"", "zz", "01", Token{}.String() + "00", "02" + Token{}.String()[2:]} {
		if _, err := ParseToken(bad); err == nil {
			t.Fatalf("ParseToken(%q) accepted", bad)
		}
	}
}

func TestUpdateDescription(t *testing.T) {
	old := bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: int32(1)}, {Key: "gone", Value: true},
		{Key: "sub", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 2}}}, {Key: "arr", Value: bson.A{1, 2, 3}}, {Key: "grow", Value: bson.A{1}}}
	next := bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1.0},
		{Key: "sub", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 3}}}, {Key: "arr", Value: bson.A{1, 9}}, {Key: "grow", Value: bson.A{1, 2}}, {Key: "new", Value: "n"}}
	got := UpdateDescription(old, next)
	want := bson.D{
		{Key: "updatedFields", Value: bson.D{{Key: "a", Value: 1.0}, {Key: "sub.y", Value: 3}, {Key: "arr.1", Value: 9}, {Key: "grow.1", Value: 2}, {Key: "new", Value: "n"}}},
		{Key: "removedFields", Value: bson.A{"gone"}},
		{Key: "truncatedArrays", Value: bson.A{bson.D{{Key: "field", Value: "arr"}, {Key: "newSize", Value: int32(2)}}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("UpdateDescription\n got %v\nwant %v", got, want)
	}
}

// TestDisambiguatedPaths follows mongod's jstest of the field: a path of
// plain names and array indexes is not ambiguous; a numeric or dotted
// field name makes it so, and its components tell indexes (numbers)
// from names (strings); a truncated array's path counts too.
func TestDisambiguatedPaths(t *testing.T) {
	doc := func(kv ...any) bson.D {
		var d bson.D
		for i := 0; i < len(kv); i += 2 {
			d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return d
	}
	cases := []struct {
		old, next bson.D
		want      bson.D // nil: no disambiguatedPaths field
	}{
		{doc("a", bson.A{doc("b", bson.A{1, 2})}), doc("a", bson.A{doc("b", bson.A{1, 3})}), nil},
		{doc("arr", bson.A{bson.A{doc("0", "x")}}), doc("arr", bson.A{bson.A{doc("0", "x", "1", "y")}}),
			doc("arr.0.0.1", bson.A{"arr", int32(0), int32(0), "1"})},
		{doc("o", doc("0", doc("1", "a"))), doc("o", doc("0", doc("1", "b"))), doc("o.0.1", bson.A{"o", "0", "1"})},
		{doc("x", 1), doc("x", 1, "new.Field.", 1), doc("new.Field.", bson.A{"new.Field."})},
		{doc("s.o", bson.A{1, 2}), doc("s.o", bson.A{1}), doc("s.o", bson.A{"s.o"})},
		{doc("gone", 1, "9", 2), doc("gone", 1), doc("9", bson.A{"9"})},
	}
	for i, c := range cases {
		desc := UpdateDescription(c.old, c.next)
		var got bson.D
		if last := desc[len(desc)-1]; last.Key == DisambiguatedPaths {
			got = last.Value.(bson.D)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("case %d: disambiguatedPaths %v, want %v (%v)", i, got, c.want, desc)
		}
	}
}

// TestEngineStampsAndTrims: events commit with their batch under growing
// stamps that never go back across a reopen, readers find them in order,
// and a trim removes the old ones and says up to where.
func TestEngineStampsAndTrims(t *testing.T) {
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	clk := clock.NewManual(time.Unix(1000, 0))
	sig := NewSignal()
	eng, err := NewEngine(base, clk, sig)
	if err != nil {
		t.Fatal(err)
	}
	commitOff := eng.NewBatch()
	commitOff.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: "off"}).Encode(nil))
	if err := commitOff.Commit(false); err != nil {
		t.Fatal(err)
	}
	if last, _ := LastTimestamp(base); last != (Timestamp{}) {
		t.Fatalf("the log kept an event before any stream: last %v", last)
	}
	if err := eng.Record(); err != nil {
		t.Fatal(err)
	}
	if start, err := TrimmedTo(base); err != nil || start != HighWater(Timestamp{T: 1000, I: 1}) {
		t.Fatalf("the log starts at %v (%v), want after 1000.1: a resume from before is history lost", start, err)
	}
	woken := sig.Wait()
	commit := func(coll string, n int) {
		b := eng.NewBatch()
		defer b.Close()
		if err := b.Set([]byte("d"+coll), []byte("doc")); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			b.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: coll}).Encode(nil))
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	commit("a", 2)
	select {
	case <-woken:
	default:
		t.Fatal("a commit with events did not signal")
	}
	clk.Advance(10 * time.Second)
	commit("b", 1)
	// A reopen on a clock that went back still stamps after the log.
	eng2, err := NewEngine(base, clock.NewManual(time.Unix(500, 0)), sig)
	if err != nil {
		t.Fatal(err)
	}
	eng = eng2
	commit("c", 1)
	var got []string
	err = Scan(base, Position{}, func(rec Record) (bool, error) {
		got = append(got, fmt.Sprintf("%d.%d.%d:%s", rec.Pos.TS.T, rec.Pos.TS.I, rec.Pos.Index, rec.Event.Coll))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Record took 1000.1 as the log's start: nothing before it is kept.
	want := "[1000.2.0:a 1000.2.1:a 1010.1.0:b 1010.2.0:c]"
	if fmt.Sprint(got) != want {
		t.Fatalf("log %v, want %s", got, want)
	}
	if ok, err := Trim(base, Timestamp{T: 1010}); err != nil || !ok {
		t.Fatalf("trim: %v %v", ok, err)
	}
	mark, err := TrimmedTo(base)
	if err != nil || mark != (Position{TS: Timestamp{T: 1000, I: 2}, Index: 1}) {
		t.Fatalf("trim mark %+v %v", mark, err)
	}
	var left []byte
	_ = Scan(base, Position{}, func(rec Record) (bool, error) { left = append(left, rec.Event.Coll...); return true, nil })
	if !bytes.Equal(left, []byte("bc")) {
		t.Fatalf("after the trim the log holds %q", left)
	}
}

// TestUpdateDescriptionMarshalsDirectly: an update event's description is
// encoded by bsonutil.AppendD (docstore's emitWrite), without the
// driver's reflection, and to the bytes bson.Marshal gives: the log's
// records stay what they were. The documents are decoded from BSON, as a
// write's are, so their values have the types a stored document has.
func TestUpdateDescriptionMarshalsDirectly(t *testing.T) {
	decoded := func(d bson.D) bson.D {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out, err := bsonutil.DecodeD(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	oid := bson.NewObjectID()
	cases := [][2]bson.D{
		{{{Key: "_id", Value: oid}, {Key: "t", Value: bson.DateTime(1)}, {Key: "token", Value: "x"}},
			{{Key: "_id", Value: oid}, {Key: "t", Value: bson.DateTime(2)}, {Key: "token", Value: "x"}}},
		{{{Key: "_id", Value: 1}, {Key: "a", Value: int32(1)}, {Key: "gone", Value: true}, {Key: "arr", Value: bson.A{1, 2, 3}}, {Key: "sub", Value: bson.D{{Key: "x", Value: int64(1)}}}},
			{{Key: "_id", Value: 1}, {Key: "a", Value: 1.5}, {Key: "arr", Value: bson.A{1, "two"}}, {Key: "sub", Value: bson.D{{Key: "x", Value: nil}, {Key: "b", Value: bson.Binary{Data: []byte{1}}}}}}},
		{{{Key: "o", Value: bson.D{{Key: "0", Value: "a"}}}, {Key: "s.o", Value: bson.A{1, 2}}},
			{{Key: "o", Value: bson.D{{Key: "0", Value: "b"}}}, {Key: "s.o", Value: bson.A{1}}}},
	}
	for i, c := range cases {
		desc := UpdateDescription(decoded(c[0]), decoded(c[1]))
		want, err := bson.Marshal(desc)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := bsonutil.AppendD(nil, desc)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("case %d: AppendD ok=%v, bytes equal %v: want bson.Marshal's bytes without its fallback", i, ok, bytes.Equal(got, want))
		}
	}
}
