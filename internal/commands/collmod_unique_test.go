package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCollModConvertToUnique walks mongod's conversion of an index to
// unique: unique without prepareUnique is refused, prepareUnique refuses
// new duplicates and keeps the old, the conversion lists the duplicates
// (359, violations) until they are gone, then the index is unique.
func TestCollModConvertToUnique(t *testing.T) {
	h, c := newTestHandler(t)
	run := func(body bson.D) bson.D { return runOn(h, c, "test", body) }
	mod := func(opts ...bson.E) bson.D {
		index := append(bson.D{{Key: "keyPattern", Value: bson.D{{Key: "x", Value: int32(1)}}}}, opts...)
		return run(bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: index}})
	}
	insert := func(id, x int32) bson.D {
		return run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}, {Key: "x", Value: x}}}}})
	}
	insert(1, 1)
	insert(2, 1)
	run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: int32(1)}}}, {Key: "name", Value: "x_1"}}}}})
	steps := []struct {
		name  string
		reply func() bson.D
		code  mongoerr.Code
		field string // a field the reply must have
		want  string // its value, extended JSON
	}{
		{"unique first", func() bson.D { return mod(bson.E{Key: "unique", Value: true}) }, mongoerr.InvalidOptions, "errmsg", `"Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first."`},
		{"unique false", func() bson.D { return mod(bson.E{Key: "unique", Value: false}) }, mongoerr.BadValue, "errmsg", `"Cannot make index non-unique"`},
		{"prepare", func() bson.D { return mod(bson.E{Key: "prepareUnique", Value: true}) }, 0, "prepareUnique_new", `true`},
		{"a new duplicate", func() bson.D { return insert(3, 1) }, 0, "writeErrors", `[{"index": 0, "code": 11000}]`},
		{"a new key", func() bson.D { return insert(4, 2) }, 0, "n", `1`},
		{"convert with duplicates", func() bson.D { return mod(bson.E{Key: "unique", Value: true}) }, mongoerr.CannotConvertIndexToUnique, "violations", `[{"ids": [1, 2]}]`},
		{"resolve", func() bson.D {
			return run(bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "limit", Value: 1}}}}})
		}, 0, "n", `1`},
		{"convert", func() bson.D { return mod(bson.E{Key: "unique", Value: true}) }, 0, "unique_new", `true`},
		{"again", func() bson.D { return mod(bson.E{Key: "unique", Value: true}) }, 0, "ok", `1.0`},
	}
	for _, st := range steps {
		reply := st.reply()
		if code := replyCode(reply); code != int32(st.code) {
			t.Fatalf("%s: %v, want code %d", st.name, reply, st.code)
		}
		got, _ := bsonutil.Field(reply, st.field)
		if !matchesJSON(t, got, st.want) {
			t.Fatalf("%s: %s = %v, want %s (%v)", st.name, st.field, got, st.want, reply)
		}
	}
	indexes := firstBatch(t, run(bson.D{{Key: "listIndexes", Value: "c"}}))
	x := bsonutil.ToD(indexes[1])
	if u, _ := bsonutil.Field(x, "unique"); u != true {
		t.Errorf("listIndexes: %v, want unique", x)
	}
}

// matchesJSON reports whether got holds what the extended JSON want
// says: numbers by value, documents by the fields want names.
func matchesJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	var w struct{ V any }
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+want+`}`), false, &w); err != nil {
		t.Fatal(err)
	}
	return subset(bsonutil.ToD(bson.D{{Key: "v", Value: got}}), bsonutil.ToD(bson.D{{Key: "v", Value: w.V}}))
}

func subset(got, want any) bool {
	switch w := want.(type) {
	case bson.D:
		g := bsonutil.ToD(got)
		for _, e := range w {
			v, ok := bsonutil.Field(g, e.Key)
			if !ok || !subset(v, e.Value) {
				return false
			}
		}
		return true
	case bson.A:
		g, ok := got.(bson.A)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return bsonutil.Compare(got, want) == 0
}
