package commands

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// These tests call command handlers in process, without a server or a
// network: a change to a command is checked in milliseconds.

// call runs one command's handler and returns its reply or error.
func call(t *testing.T, h *Handler, db string, body bson.D) (bson.D, error) {
	t.Helper()
	entry, ok := h.table[body[0].Key]
	if !ok {
		t.Fatalf("no command %s", body[0].Key)
	}
	return entry.run(h, &request{ctx: context.Background(), db: db, name: body[0].Key, body: body})
}

func mustCall(t *testing.T, h *Handler, db string, body bson.D) bson.D {
	t.Helper()
	out, err := call(t, h, db, body)
	if err != nil {
		t.Fatalf("%v: %v", body, err)
	}
	return out
}

func firstBatch(t *testing.T, reply bson.D) bson.A {
	t.Helper()
	cur, _ := bsonutil.Field(reply, "cursor")
	batch, _ := bsonutil.Field(cur.(bson.D), "firstBatch")
	return asArray(batch)
}

// asArray is a reply's batch as bson.A: a change stream's comes as its
// encoded events.
func asArray(v any) bson.A {
	raws, ok := v.([]bson.Raw)
	if !ok {
		return v.(bson.A)
	}
	out := bson.A{}
	for _, d := range raws {
		out = append(out, d)
	}
	return out
}

func seedHandler(t *testing.T, h *Handler) {
	t.Helper()
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "ann"}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "Ann"}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "bob"}, {Key: "n", Value: 3}},
	}}})
}

func TestHandlerFindWithLetAndCollation(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "c"},
		{Key: "filter", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gte", Value: bson.A{"$n", "$$min"}}}}}},
		{Key: "let", Value: bson.D{{Key: "min", Value: 2}}}})
	if got := len(firstBatch(t, out)); got != 2 {
		t.Fatalf("let: %d documents", got)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "name", Value: "ANN"}}},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}})
	if got := len(firstBatch(t, out)); got != 2 {
		t.Fatalf("collation: %d documents", got)
	}
	_, err := call(t, h, "test", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$expr", Value: "$$nope"}}}})
	if e := mongoerr.As(err); e.Code != mongoerr.Location17276 {
		t.Fatalf("undefined variable: %v", err)
	}
}

func TestHandlerUpdateSortAndValidation(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	mustCall(t, h, "test", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "top", Value: true}}}}},
		{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}},
	}}}})
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "top", Value: true}}}})
	if b := firstBatch(t, out); len(b) != 1 || b[0].(bson.Raw).Lookup("_id").Int32() != 3 {
		t.Fatalf("sorted updateOne changed %v", b)
	}
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "v"}, {Key: "validator", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 0}}}}}})
	out = mustCall(t, h, "test", bson.D{{Key: "insert", Value: "v"}, {Key: "documents", Value: bson.A{bson.D{{Key: "n", Value: 0}}}}})
	errs, _ := bsonutil.Field(out, "writeErrors")
	if a, ok := errs.(bson.A); !ok || len(a) != 1 {
		t.Fatalf("validation: %v", out)
	}
}

func TestHandlerBulkWriteAndViews(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	out := mustCall(t, h, "admin", bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{
		bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 9}}}},
		bson.D{{Key: "delete", Value: 1}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}},
	}}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "other.x"}}, bson.D{{Key: "ns", Value: "test.c"}}}}})
	if n, _ := bsonutil.Field(out, "nInserted"); n != int32(1) {
		t.Fatalf("bulkWrite: %v", out)
	}
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "bobs"}, {Key: "viewOn", Value: "c"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "name", Value: "bob"}}}}}}})
	if got := len(firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "bobs"}}))); got != 1 {
		t.Fatalf("view: %d documents", got)
	}
	_, err := call(t, h, "test", bson.D{{Key: "insert", Value: "bobs"}, {Key: "documents", Value: bson.A{bson.D{}}}})
	if e := mongoerr.As(err); e.Code != mongoerr.CommandNotSupportedOnView {
		t.Fatalf("insert into a view: %v", err)
	}
}
