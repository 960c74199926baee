package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/fuzzlimit"
	"github.com/mayflydb/mayfly/internal/server"
)

// panicCounter is a slog handler that counts the handler's panic reports.
type panicCounter struct{ n atomic.Int64 }

func (p *panicCounter) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicCounter) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *panicCounter) WithGroup(string) slog.Handler            { return p }
func (p *panicCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panicked") {
		p.n.Add(1)
	}
	return nil
}

// FuzzCommand runs real commands (the seed corpus in testdata/fuzz, plus
// the built-in ones below), each with one field replaced, removed,
// renamed or duplicated, through the command handler in process. No input
// may panic a handler, and every reply is ok: 1 or ok: 0 with a code and a
// message.
func FuzzCommand(f *testing.F) {
	for i, cmd := range fuzzSeeds {
		raw, err := bson.MarshalExtJSON(cmd, false, false)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, uint16(i), uint8(i), []byte("x"))
	}
	h, c := newTestHandler(f)
	panics := &panicCounter{}
	h.deps.Logger = slog.New(panics)
	seedData(h, c)
	f.Fuzz(func(t *testing.T, raw []byte, at uint16, kind uint8, data []byte) {
		fuzzlimit.Run(t, func() {
			var cmd bson.D
			if bson.UnmarshalExtJSON(raw, false, &cmd) != nil || len(cmd) == 0 {
				cmd = cloneD(fuzzSeeds[int(at)%len(fuzzSeeds)])
			}
			cmd = mutate(cmd, int(at), kind, data)
			if len(cmd) == 0 {
				return
			}
			db := "fuzz"
			if v, ok := bsonutil.Field(cmd, "$db"); ok {
				db, _ = v.(string)
				cmd = without(cmd, "$db")
			}
			cmd = boundTime(cmd)
			before := panics.n.Load()
			reply := runOn(h, c, db, cmd)
			if panics.n.Load() != before {
				t.Fatalf("%v panicked a handler", cmd)
			}
			checkReplyShape(t, cmd, reply)
		}, raw, at, kind, data)
	})
}

// fuzzMaxTimeMS is the longest maxTimeMS a fuzzed command runs under: below
// fuzzlimit's 1 s of CPU, so that a command the operation's guard can stop
// is stopped before it counts as a slow input, whatever the machine's load.
const fuzzMaxTimeMS = 500

// boundTime gives cmd maxTimeMS fuzzMaxTimeMS if it has none, none (0) or
// a longer one; other values, wrong ones included, stay to be parsed.
func boundTime(cmd bson.D) bson.D {
	for i, e := range cmd {
		if e.Key != "maxTimeMS" {
			continue
		}
		switch n := e.Value.(type) {
		case int32, int64, float64:
			if ms := toFloat(n); ms == 0 || ms > fuzzMaxTimeMS {
				cmd[i].Value = int32(fuzzMaxTimeMS)
			}
		}
		return cmd
	}
	return append(cmd, bson.E{Key: "maxTimeMS", Value: int32(fuzzMaxTimeMS)})
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

func checkReplyShape(t *testing.T, cmd, reply bson.D) {
	ok, _ := bsonutil.Field(reply, "ok")
	switch ok {
	case 1.0:
		return
	case 0.0:
		code, _ := bsonutil.Field(reply, "code")
		msg, _ := bsonutil.Field(reply, "errmsg")
		if n, isInt := code.(int32); !isInt || n == 0 {
			t.Fatalf("%v: error reply without a code: %v", cmd, reply)
		}
		if _, isStr := msg.(string); !isStr {
			t.Fatalf("%v: error reply without a message: %v", cmd, reply)
		}
	default:
		t.Fatalf("%v: reply without ok: %v", cmd, reply)
	}
}

// seedData gives the commands something to read, with an index and a TTL
// index.
func seedData(h *Handler, c *server.Conn) {
	docs := bson.A{}
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 7)},
			{Key: "s", Value: strings.Repeat("x", i)}, {Key: "arr", Value: bson.A{int32(i), "y"}},
			{Key: "at", Value: bson.DateTime(int64(i) * 1000)}})
	}
	runOn(h, c, "fuzz", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	runOn(h, c, "fuzz", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: int32(3600)}},
	}}})
}

// mutate changes the field or array element numbered at (in depth-first
// order) as kind says, with data as the new value's material.
func mutate(cmd bson.D, at int, kind uint8, data []byte) bson.D {
	var slots []slot
	collectSlots(&cmd, nil, &slots, 0)
	if len(slots) == 0 {
		return cmd
	}
	s := slots[at%len(slots)]
	switch kind % 16 {
	case 0:
		s.set(nil)
	case 1:
		s.set(int32(len(data)) - 8)
	case 2:
		s.set(int64(-1) << (len(data) % 64))
	case 3:
		s.set(fuzzFloat(data))
	case 4:
		s.set(string(data))
	case 5:
		s.set(bson.D{})
	case 6:
		s.set(bson.A{})
	case 7:
		s.set(len(data)%2 == 0)
	case 8:
		s.set(bson.D{{Key: "$" + string(data), Value: int32(1)}})
	case 9:
		s.set(bson.A{string(data), nil, bson.D{}, int32(1)})
	case 10:
		s.set(deepDoc(len(data)))
	case 11:
		s.set(bson.DateTime(len(data)))
	case 12:
		s.set(bson.Binary{Data: data})
	case 13:
		s.remove()
	case 14:
		s.rename(string(data))
	default:
		s.duplicate()
	}
	return cmd
}

// slot is one place in a command that mutate can change.
type slot struct {
	doc    *bson.D
	arr    *bson.A
	i      int
	holder *any // where the container itself is kept (nil: the command)
}

func collectSlots(d *bson.D, holder *any, out *[]slot, depth int) {
	for i := range *d {
		*out = append(*out, slot{doc: d, i: i, holder: holder})
		collectValue(&(*d)[i].Value, out, depth)
	}
}

func collectValue(v *any, out *[]slot, depth int) {
	if depth > 20 {
		return
	}
	switch x := (*v).(type) {
	case bson.D:
		collectSlots(&x, v, out, depth+1)
	case bson.A:
		for j := range x {
			*out = append(*out, slot{arr: &x, i: j, holder: v})
			collectValue(&x[j], out, depth+1)
		}
	}
}

func (s slot) set(v any) {
	if s.doc != nil {
		(*s.doc)[s.i].Value = v
	} else {
		(*s.arr)[s.i] = v
	}
	s.store()
}

func (s slot) remove() {
	if s.doc != nil {
		*s.doc = append((*s.doc)[:s.i:s.i], (*s.doc)[s.i+1:]...)
	} else {
		*s.arr = append((*s.arr)[:s.i:s.i], (*s.arr)[s.i+1:]...)
	}
	s.store()
}

// store puts a container whose length changed back where it is kept.
func (s slot) store() {
	switch {
	case s.holder == nil:
	case s.doc != nil:
		*s.holder = *s.doc
	default:
		*s.holder = *s.arr
	}
}

func (s slot) rename(name string) {
	if s.doc != nil {
		(*s.doc)[s.i].Key = name
	}
	s.store()
}

func (s slot) duplicate() {
	if s.doc != nil {
		*s.doc = append(*s.doc, (*s.doc)[s.i])
	} else {
		*s.arr = append(*s.arr, (*s.arr)[s.i])
	}
	s.store()
}

func fuzzFloat(data []byte) float64 {
	specials := []float64{0, -0.5, 1e308, -1e308, 2147483648, 9.2e18}
	if len(data) == 0 {
		return specials[0]
	}
	switch data[0] % 8 {
	case 6:
		return float64(len(data)) / 3
	case 7:
		var zero float64
		return zero / zero // NaN
	}
	return specials[int(data[0]%8)%len(specials)]
}

func deepDoc(depth int) bson.D {
	d := bson.D{{Key: "x", Value: int32(1)}}
	for range depth % 300 {
		d = bson.D{{Key: "a", Value: d}}
	}
	return d
}

func cloneD(d bson.D) bson.D {
	raw, _ := bson.Marshal(d)
	var out bson.D
	_ = bson.Unmarshal(raw, &out)
	return out
}

func without(d bson.D, key string) bson.D {
	out := d[:0:0]
	for _, e := range d {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

// fuzzSeeds are real commands as drivers and shells send them.
var fuzzSeeds = []bson.D{
	{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}}, {Key: "sort", Value: bson.D{{Key: "s", Value: -1}}}, {Key: "projection", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "skip", Value: 1}, {Key: "limit", Value: 5}, {Key: "batchSize", Value: 2}},
	{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$a", 3}}}}}}, {Key: "hint", Value: "a_1"}},
	{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 2}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$a"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$s"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: 1}, {Key: "len", Value: bson.D{{Key: "$size", Value: "$all"}}}}}},
	}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}},
	{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$unwind", Value: "$arr"}},
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "c"}, {Key: "localField", Value: "arr"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "j"}}}},
		bson.D{{Key: "$addFields", Value: bson.D{{Key: "r", Value: bson.D{{Key: "$reduce", Value: bson.D{{Key: "input", Value: "$j"}, {Key: "initialValue", Value: ""}, {Key: "in", Value: bson.D{{Key: "$concat", Value: bson.A{"$$value", "$$this.s"}}}}}}}}}}},
		bson.D{{Key: "$limit", Value: 3}},
	}}, {Key: "cursor", Value: bson.D{}}},
	{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "admin"}},
	{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "m", Value: bson.D{{Key: "$regexFindAll", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "x+"}}}}}}}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "explain", Value: false}},
	{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}, {Key: "s", Value: "ins"}}}}, {Key: "ordered", Value: false}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}, {Key: "j", Value: true}}}},
	{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$push", Value: bson.D{{Key: "arr", Value: "z"}}}}}, {Key: "multi", Value: true}, {Key: "upsert", Value: true}}}}},
	{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 4}}}, {Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$concat", Value: bson.A{"$s", "!"}}}}}}}}}}}}},
	{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 6}}}, {Key: "limit", Value: 1}}}}},
	{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 2}}}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: true}}}}}, {Key: "new", Value: true}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: 3}}}}}, {Key: "limit", Value: 10}},
	{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, {Key: "query", Value: bson.D{}}},
	{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}, {Key: "a", Value: -1}}}, {Key: "name", Value: "s_1_a_-1"}, {Key: "unique", Value: false}, {Key: "partialFilterExpression", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}}}}}}},
	{{Key: "listIndexes", Value: "c"}, {Key: "cursor", Value: bson.D{}}},
	{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "c"}}}, {Key: "nameOnly", Value: true}},
	{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 60}}}},
	{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}, {Key: "max", Value: 10}},
	{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "verbosity", Value: "executionStats"}},
	{{Key: "getMore", Value: int64(1)}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 2}},
	{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{int64(1)}}},
	{{Key: "killOp", Value: 1}, {Key: "op", Value: 12345}, {Key: "$db", Value: "admin"}},
	{{Key: "validate", Value: "c"}, {Key: "full", Value: true}},
	{{Key: "hello", Value: 1}, {Key: "client", Value: bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "fuzz"}, {Key: "version", Value: "1"}}}}}, {Key: "compression", Value: bson.A{"zstd"}}},
	{{Key: "renameCollection", Value: "fuzz.capped"}, {Key: "to", Value: "fuzz.capped2"}, {Key: "$db", Value: "admin"}},
	{{Key: "drop", Value: "capped2"}},
}

func TestMutateReachesNestedFields(t *testing.T) {
	cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.A{int32(1), int32(2)}}}}}
	// Slots: find, filter, filter.a, a.0, a.1.
	got := mutate(cloneD(cmd), 3, 13, nil) // remove a.0
	want := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.A{int32(2)}}}}}
	if !equalD(got, want) {
		t.Fatalf("remove a.0: %v", got)
	}
	got = mutate(cloneD(cmd), 2, 15, nil) // duplicate filter.a
	if f := got[1].Value.(bson.D); len(f) != 2 || f[1].Key != "a" {
		t.Fatalf("duplicate filter.a: %v", got)
	}
}

func equalD(a, b bson.D) bool {
	ra, _ := bson.Marshal(a)
	rb, _ := bson.Marshal(b)
	return string(ra) == string(rb)
}
