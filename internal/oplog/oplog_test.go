package oplog

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func marshal(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if bsonutil.Compare(got, want) != 0 {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// TestDiff: an updateDescription becomes mongod's $v:2 diff, array
// indexes told from field names by disambiguatedPaths.
func TestDiff(t *testing.T) {
	desc := bson.D{
		{Key: "updatedFields", Value: bson.D{
			{Key: "a", Value: int32(1)},
			{Key: "sub.y", Value: int32(2)},
			{Key: "arr.1", Value: int32(9)},
			{Key: "arr.2.q", Value: int32(5)},
			{Key: "m.7", Value: "seven"}, // the field "7", by disambiguatedPaths
		}},
		{Key: "removedFields", Value: bson.A{"sub.x", "gone"}},
		{Key: "truncatedArrays", Value: bson.A{bson.D{{Key: "field", Value: "list"}, {Key: "newSize", Value: int32(2)}}}},
		{Key: changestream.DisambiguatedPaths, Value: bson.D{{Key: "m.7", Value: bson.A{"m", "7"}}}},
	}
	got, err := Diff(desc)
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{
		{Key: "d", Value: bson.D{{Key: "gone", Value: false}}},
		{Key: "u", Value: bson.D{{Key: "a", Value: int32(1)}}},
		{Key: "ssub", Value: bson.D{{Key: "d", Value: bson.D{{Key: "x", Value: false}}}, {Key: "u", Value: bson.D{{Key: "y", Value: int32(2)}}}}},
		{Key: "sarr", Value: bson.D{{Key: "a", Value: true}, {Key: "u1", Value: int32(9)},
			{Key: "s2", Value: bson.D{{Key: "u", Value: bson.D{{Key: "q", Value: int32(5)}}}}}}},
		{Key: "sm", Value: bson.D{{Key: "u", Value: bson.D{{Key: "7", Value: "seven"}}}}},
		{Key: "slist", Value: bson.D{{Key: "a", Value: true}, {Key: "l", Value: int32(2)}}},
	}
	same(t, "diff", got, want)
}

// TestEntryShapes: each kind of change as mongod logs it, a TTL deletion
// as a plain delete, a warning left out, and a write of several changes
// as one applyOps entry at the write's timestamp.
func TestEntryShapes(t *testing.T) {
	uuid := make([]byte, 16)
	ui := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: uuid}
	doc := bson.D{{Key: "_id", Value: int32(7)}, {Key: "x", Value: "y"}}
	idKey := keyenc.AppendValue(nil, int32(8))
	rec := func(i uint32, ev changestream.Event) changestream.Record {
		return changestream.Record{Pos: changestream.Position{TS: changestream.Timestamp{T: 100, I: 3}, Index: i}, WallMillis: 5000, Event: &ev}
	}
	tail := bson.D{{Key: "ts", Value: bson.Timestamp{T: 100, I: 3}}, {Key: "v", Value: int64(2)}, {Key: "wall", Value: bson.DateTime(5000)}}
	cases := []struct {
		name  string
		write []changestream.Record
		want  bson.D
	}{
		{"insert", []changestream.Record{rec(0, changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "c", UUID: uuid, Doc: marshal(t, doc)})},
			bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "db.c"}, {Key: "ui", Value: ui}, {Key: "o", Value: doc}, {Key: "o2", Value: bson.D{{Key: "_id", Value: int32(7)}}}}},
		{"replace", []changestream.Record{rec(0, changestream.Event{Op: changestream.OpReplace, DB: "db", Coll: "c", Doc: marshal(t, doc)})},
			bson.D{{Key: "op", Value: "u"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: doc}, {Key: "o2", Value: bson.D{{Key: "_id", Value: int32(7)}}}}},
		{"TTL deletion", []changestream.Record{rec(0, changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c", ID: idKey,
			Expired: &changestream.Expiry{Index: "at_1", AfterSecs: 60, AtMillis: 4000}})},
			bson.D{{Key: "op", Value: "d"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: int32(8)}}}}},
		{"drop", []changestream.Record{rec(0, changestream.Event{Op: changestream.OpDrop, DB: "db", Coll: "c"})},
			bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "db.$cmd"}, {Key: "o", Value: bson.D{{Key: "drop", Value: "c"}}}}},
		{"rename", []changestream.Record{rec(0, changestream.Event{Op: changestream.OpRename, DB: "db", Coll: "a", ToDB: "db2", ToColl: "b"})},
			bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "db.$cmd"}, {Key: "o", Value: bson.D{
				{Key: "renameCollection", Value: "db.a"}, {Key: "to", Value: "db2.b"}, {Key: "stayTemp", Value: false}}}}},
		{"two inserts", []changestream.Record{
			rec(0, changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "c", Doc: marshal(t, doc)}),
			rec(1, changestream.Event{Op: changestream.OpExpiring, DB: "db", Coll: "c", ID: idKey}),
			rec(2, changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c", ID: idKey}),
		}, bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "admin.$cmd"}, {Key: "o", Value: bson.D{{Key: "applyOps", Value: bson.A{
			bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: doc}, {Key: "o2", Value: bson.D{{Key: "_id", Value: int32(7)}}}},
			bson.D{{Key: "op", Value: "d"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: int32(8)}}}},
		}}}}}},
	}
	for _, c := range cases {
		got, ok, err := Entry(c.write)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", c.name, ok, err)
		}
		same(t, c.name, got, append(c.want, tail...))
	}
	if _, ok, err := Entry([]changestream.Record{rec(0, changestream.Event{Op: changestream.OpExpiring, DB: "db", Coll: "c", ID: idKey})}); ok || err != nil {
		t.Errorf("a warning alone made an entry (%v)", err)
	}
}

// TestCursorBothWays: the cursor reads every write once, oldest first
// or newest first, across chunks, and a write of several changes is one
// entry.
func TestCursorBothWays(t *testing.T) {
	st, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writes = 2*chunk + 17
	for i := 1; i <= writes; i++ {
		b := st.NewBatch()
		n := 1 + i%3
		events := make([][]byte, n)
		for k := range events {
			d := bson.D{{Key: "_id", Value: int32(i*10 + k)}}
			ev := changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "c", Doc: marshal(t, d)}
			if i%7 == 0 { // TTL deletions, which the log keeps as one compact record
				ev = changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c", ID: keyenc.AppendValue(nil, int32(i*10+k)),
					Expired: &changestream.Expiry{Index: "at_1", AfterSecs: 1, AtMillis: int64(i)}}
			}
			events[k] = ev.Encode(nil)
		}
		if err := changestream.WriteEvents(b, changestream.Timestamp{T: uint32(1000 + i), I: 1}, int64(i), events); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c *Cursor) []uint32 {
		var ts []uint32
		for {
			d, ok, err := c.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return ts
			}
			v, _ := bsonutil.Lookup(d, "ts")
			ts = append(ts, v.(bson.Timestamp).T)
			if n := 1 + (ts[len(ts)-1]-1000)%3; n > 1 {
				o, _ := bsonutil.Lookup(d, "o")
				ops, _ := bsonutil.Lookup(o.(bson.D), "applyOps")
				if len(ops.(bson.A)) != int(n) {
					t.Fatalf("entry %v: want %d operations", d, n)
				}
			}
			if o, _ := bsonutil.Lookup(d, "op"); (1+(ts[len(ts)-1]-1000)%3 > 1) != (o == "c") {
				t.Fatalf("entry %v: a write of several changes must be one applyOps entry", d)
			}
		}
	}
	fwd, back := read(NewCursor(st, changestream.Timestamp{})), read(NewReverseCursor(st))
	if len(fwd) != writes || len(back) != writes {
		t.Fatalf("read %d forward and %d back, want %d", len(fwd), len(back), writes)
	}
	for i := range fwd {
		if fwd[i] != uint32(1001+i) || back[i] != uint32(1000+writes-i) {
			t.Fatalf("order at %d: forward %d, back %d", i, fwd[i], back[i])
		}
	}
	from := read(NewCursor(st, changestream.Timestamp{T: 1100, I: 1}))
	if len(from) != writes-100 || from[0] != 1101 {
		t.Fatalf("after 1100: %d entries from %v", len(from), from[:1])
	}
	n, size, err := Stats(st)
	if err != nil || n != writes || size == 0 {
		t.Fatalf("stats: %d entries, %d bytes, %v", n, size, err)
	}
}

// TestStatsEstimatesALongLog: past the writes it counts one by one, Stats
// scales its counts by the log's bytes on disk, close to the true ones.
func TestStatsEstimatesALongLog(t *testing.T) {
	st, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const writes = 3000
	for i := 1; i <= writes; i++ {
		b := st.NewBatch()
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: "a session's worth of fields"}}
		ev := (&changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "c", Doc: marshal(t, d)}).Encode(nil)
		if err := changestream.WriteEvents(b, changestream.Timestamp{T: uint32(1000 + i), I: 1}, int64(i), [][]byte{ev}); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	exact, exactSize, err := stats(st, 0)
	if err != nil || exact != writes {
		t.Fatalf("counted %d, %v", exact, err)
	}
	n, size, err := stats(st, 300)
	if err != nil {
		t.Fatal(err)
	}
	if n < writes*8/10 || n > writes*12/10 || size < exactSize*8/10 || size > exactSize*12/10 {
		t.Fatalf("estimated %d writes of %d bytes; there are %d of %d", n, size, writes, exactSize)
	}
	t.Logf("estimated %d writes, %d bytes; exact %d, %d", n, size, writes, exactSize)
}
