package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var caseInsensitive = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}}

// seedCollated makes test.ci with a case-insensitive default collation.
func seedCollated(t *testing.T, h *Handler) {
	t.Helper()
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "ci"}, {Key: "collation", Value: caseInsensitive}})
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "ci"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "name", Value: "ann"}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "name", Value: "Ann"}},
		bson.D{{Key: "_id", Value: int32(3)}, {Key: "name", Value: "bob"}},
	}}})
}

func TestDefaultCollationAppliesWhenNoneIsGiven(t *testing.T) {
	h, _ := newTestHandler(t)
	seedCollated(t, h)
	ann := bson.D{{Key: "name", Value: "ANN"}}
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "ci"}, {Key: "filter", Value: ann}})
	if got := len(firstBatch(t, out)); got != 2 {
		t.Fatalf("find under the default collation: %d documents", got)
	}
	// An explicit simple collation compares in binary order.
	out = mustCall(t, h, "test", bson.D{{Key: "find", Value: "ci"}, {Key: "filter", Value: ann},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}})
	if got := len(firstBatch(t, out)); got != 0 {
		t.Fatalf("find with the simple collation: %d documents", got)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "count", Value: "ci"}, {Key: "query", Value: ann}})
	if n, _ := bsonutil.Field(out, "n"); n != int32(2) {
		t.Fatalf("count %v", out)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "distinct", Value: "ci"}, {Key: "key", Value: "name"}})
	if v, _ := bsonutil.Field(out, "values"); len(v.(bson.A)) != 2 {
		t.Fatalf("distinct %v", out)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "update", Value: "ci"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: ann}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}}}, {Key: "multi", Value: true}}}}})
	if n, _ := bsonutil.Field(out, "nModified"); n != int32(2) {
		t.Fatalf("update %v", out)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "delete", Value: "ci"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "name", Value: "BOB"}}}, {Key: "limit", Value: int32(0)}}}}})
	if n, _ := bsonutil.Field(out, "n"); n != int32(1) {
		t.Fatalf("delete %v", out)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "aggregate", Value: "ci"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: ann}}, bson.D{{Key: "$count", Value: "n"}}}}, {Key: "cursor", Value: bson.D{}}})
	if b := firstBatch(t, out); len(b) != 1 || num(t, rawDoc(t, b[0]), "n") != 2 {
		t.Fatalf("aggregate %v", out)
	}
}

func TestDefaultCollationInCatalog(t *testing.T) {
	h, _ := newTestHandler(t)
	seedCollated(t, h)
	out := mustCall(t, h, "test", bson.D{{Key: "listCollections", Value: int32(1)}, {Key: "filter", Value: bson.D{{Key: "name", Value: "ci"}}}})
	info := rawDoc(t, firstBatch(t, out)[0])
	coll := doc(t, doc(t, info, "options"), "collation")
	if v, _ := bsonutil.Field(coll, "locale"); v != "en" || num(t, coll, "strength") != 2 {
		t.Fatalf("options.collation %v", coll)
	}
	if _, ok := bsonutil.Field(coll, "caseFirst"); !ok {
		t.Fatalf("collation not in full: %v", coll)
	}
	if _, ok := bsonutil.Field(doc(t, info, "idIndex"), "collation"); !ok {
		t.Fatalf("idIndex %v", info)
	}
	// An index without a collation takes the collection's.
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "ci"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "name", Value: int32(1)}}}, {Key: "name", Value: "name_1"}}}}})
	out = mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "ci"}})
	for _, ix := range firstBatch(t, out) {
		if _, ok := bsonutil.Field(rawDoc(t, ix), "collation"); !ok {
			t.Fatalf("index without the default collation: %v", ix)
		}
	}
	// Its _id index is binary: a string _id is refused, never a silent duplicate.
	out = mustCall(t, h, "test", bson.D{{Key: "insert", Value: "ci"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "x"}}}}})
	we, _ := bsonutil.Field(out, "writeErrors")
	if errs, ok := we.(bson.A); !ok || len(errs) != 1 || num(t, rawDoc(t, errs[0]), "code") != int64(mongoerr.BadValue) {
		t.Fatalf("string _id in a collated collection: %v", out)
	}
}

func TestViewDefaultCollation(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}},
		{Key: "collation", Value: caseInsensitive}})
	ann := bson.D{{Key: "name", Value: "ANN"}}
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: ann}})
	if got := len(firstBatch(t, out)); got != 2 {
		t.Fatalf("find on the view: %d documents", got)
	}
	// The same collation may be given again; another is refused.
	mustCall(t, h, "test", bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: ann}, {Key: "collation", Value: caseInsensitive}})
	_, err := call(t, h, "test", bson.D{{Key: "find", Value: "v"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}})
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.OptionNotSupportedOnView {
		t.Fatalf("other collation on a view: %v", err)
	}
	_, err = call(t, h, "test", bson.D{{Key: "create", Value: "v2"}, {Key: "viewOn", Value: "v"}, {Key: "pipeline", Value: bson.A{}}})
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.OptionNotSupportedOnView {
		t.Fatalf("view on a view with another collation: %v", err)
	}
}

// rawDoc is a batch element as a document, whether decoded or raw.
func rawDoc(t *testing.T, v any) bson.D {
	t.Helper()
	switch x := v.(type) {
	case bson.D:
		return x
	case bson.Raw:
		var d bson.D
		if err := bson.Unmarshal(x, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Fatalf("not a document: %T", v)
	return nil
}

func TestUpdatesUnderACollation(t *testing.T) {
	h, _ := newTestHandler(t)
	seedCollated(t, h)
	// A pipeline update compares under the collection's collation.
	pipe := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "isAnn", Value: bson.D{{Key: "$eq", Value: bson.A{"$name", "ANN"}}}}}}}}
	out := mustCall(t, h, "test", bson.D{{Key: "update", Value: "ci"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: pipe}, {Key: "multi", Value: true}}}}})
	if n, _ := bsonutil.Field(out, "nModified"); n != int32(3) {
		t.Fatalf("pipeline update %v", out)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "count", Value: "ci"}, {Key: "query", Value: bson.D{{Key: "isAnn", Value: true}}}})
	if n, _ := bsonutil.Field(out, "n"); n != int32(2) {
		t.Fatalf("documents the collated $eq matched: %v", out)
	}
	// Update operators compare under it too; they store what they are given.
	mustCall(t, h, "test", bson.D{{Key: "update", Value: "ci"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "tags", Value: bson.A{"a", "b"}}}}}}}}}})
	for _, tc := range []struct {
		u       bson.D
		filters bson.A
		want    string
	}{
		{bson.D{{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: "A"}}}}, nil, `["a","b"]`},
		{bson.D{{Key: "$pull", Value: bson.D{{Key: "tags", Value: "B"}}}}, nil, `["a"]`},
		{bson.D{{Key: "$set", Value: bson.D{{Key: "tags.$[t]", Value: "x"}}}}, bson.A{bson.D{{Key: "t", Value: "A"}}}, `["x"]`},
		{bson.D{{Key: "$push", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$each", Value: bson.A{"B", "a"}}, {Key: "$sort", Value: int32(1)}}}}}}, nil, `["a","B","x"]`},
		{bson.D{{Key: "$pullAll", Value: bson.D{{Key: "tags", Value: bson.A{"X"}}}}}, nil, `["a","B"]`},
	} {
		stmt := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "u", Value: tc.u}}
		if tc.filters != nil {
			stmt = append(stmt, bson.E{Key: "arrayFilters", Value: tc.filters})
		}
		mustCall(t, h, "test", bson.D{{Key: "update", Value: "ci"}, {Key: "updates", Value: bson.A{stmt}}})
		out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "ci"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(1)}}}})
		tags, _ := bsonutil.Field(rawDoc(t, firstBatch(t, out)[0]), "tags")
		if got, _ := bson.MarshalExtJSON(bson.D{{Key: "t", Value: tags}}, false, false); string(got) != `{"t":`+tc.want+`}` {
			t.Fatalf("%v: tags %s, want %s", tc.u, got, tc.want)
		}
	}
	// $max compares "ann" and "Zed" under the collation: "Zed" is greater.
	mustCall(t, h, "test", bson.D{{Key: "update", Value: "ci"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "u", Value: bson.D{{Key: "$max", Value: bson.D{{Key: "name", Value: "Zed"}}}}}}}}})
	out = mustCall(t, h, "test", bson.D{{Key: "count", Value: "ci"}, {Key: "query", Value: bson.D{{Key: "name", Value: "zed"}}}})
	if n, _ := bsonutil.Field(out, "n"); n != int32(1) {
		t.Fatalf("$max under the collation: %v", out)
	}
}
