package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCollModView: collMod replaces a view's pipeline, its viewOn, or
// both, and reads through the view follow; it refuses collection options
// on a view, viewOn and pipeline on a collection, a bad pipeline, a view
// on a view of another collation and a cycle, with mongod's codes and
// messages, and a refused change leaves the view as it was.
func TestCollModView(t *testing.T) {
	h, _ := newTestHandler(t)
	docs := bson.A{}
	for i := range 6 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 3)}})
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "d"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "d1"}, {Key: "a", Value: int32(2)}}}}})
	match := func(a int32) bson.A { return bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: a}}}}} }
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: match(1)}})
	ids := func() []any {
		t.Helper()
		var out []any
		for _, d := range firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "v"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}})) {
			id, _ := bsonutil.Field(asDoc(t, d), "_id")
			out = append(out, id)
		}
		return out
	}
	if reply := mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "v"}, {Key: "pipeline", Value: match(2)}}); len(reply) != 0 {
		t.Fatalf("reply %v", reply)
	}
	if got := bsonutil.Format(ids()); got != bsonutil.Format([]any{int32(2), int32(5)}) {
		t.Fatalf("after a new pipeline: %s", got)
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "d"}})
	if got := ids(); len(got) != 1 || got[0] != "d1" {
		t.Fatalf("after a new viewOn: %v", got)
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: ""}}) // mongod leaves viewOn then
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: match(0)}})
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "v2"}, {Key: "viewOn", Value: "v"}})
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "french"}, {Key: "viewOn", Value: "c"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}})
	for _, tc := range []struct {
		body bson.D
		code mongoerr.Code
		msg  string
	}{
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}}, mongoerr.InvalidOptions, "option not supported on a view: validator"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}}}}, mongoerr.InvalidOptions, "option not supported on a view: index"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "expireAfterSeconds", Value: 10}}, mongoerr.InvalidOptions, "option not supported on a view: expireAfterSeconds"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "hours"}}}}, mongoerr.InvalidOptions, "option only supported on a time-series collection: timeseries"},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "viewOn", Value: "d"}, {Key: "pipeline", Value: bson.A{}}}, mongoerr.InvalidOptions, "option only supported on a view: pipeline"},
		{bson.D{{Key: "collMod", Value: "c"}, {Key: "viewOn", Value: "d"}}, mongoerr.InvalidOptions, "option only supported on a view: viewOn"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "pipeline", Value: bson.D{}}}, mongoerr.TypeMismatch, "BSON field 'collMod.pipeline' is the wrong type 'object', expected type 'array'"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: 1}}, mongoerr.TypeMismatch, "BSON field 'collMod.viewOn' is the wrong type 'int', expected type 'string'"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$nope", Value: 1}}}}}, mongoerr.OptionNotSupportedOnView, ""},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "v2"}}, mongoerr.GraphContainsCycle, "View cycle detected: test.v => test.v => test.v2 => test.v"},
		{bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "french"}}, mongoerr.OptionNotSupportedOnView, "View test.v has conflicting collation with view test.french"},
	} {
		_, err := call(t, h, "test", tc.body)
		if me := mongoerr.As(err); err == nil || me.Code != tc.code || tc.msg != "" && me.Msg != tc.msg {
			t.Errorf("%s: %v, want %d %q", bsonutil.Format(tc.body), err, tc.code, tc.msg)
		}
	}
	if got := bsonutil.Format(ids()); got != bsonutil.Format([]any{int32(0), int32(3)}) {
		t.Fatalf("refused changes moved the view: %s", got)
	}
}
