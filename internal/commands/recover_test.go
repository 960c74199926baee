package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestHandlerPanicEndsOperationAndAnswersError(t *testing.T) {
	h, c := newTestHandler(t)
	h.table["panicForTest"] = command{name: "panicForTest", run: func(*Handler, *request) (bson.D, error) {
		var stages []int
		_ = stages[0] // the index out of range that {aggregate: 1, pipeline: []} used to hit
		return nil, nil
	}}
	reply := runOn(h, c, "test", bson.D{{Key: "panicForTest", Value: 1}})
	if got := replyCode(reply); got != int32(mongoerr.InternalError) {
		t.Fatalf("reply %v: want code %d", reply, mongoerr.InternalError)
	}
	if ops := h.deps.Activity.Snapshot(); len(ops) != 0 {
		t.Fatalf("operations still recorded after the panic: %+v", ops)
	}
	if got := runOn(h, c, "test", bson.D{{Key: "ping", Value: 1}}); replyCode(got) != 0 {
		t.Fatalf("ping after the panic: %v", got)
	}
}

func TestCollectionlessAggregateArguments(t *testing.T) {
	h, c := newTestHandler(t)
	cases := []struct {
		body bson.D
		code mongoerr.Code
		msg  string
	}{
		{bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
			mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for an empty pipeline."},
		{bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "cursor", Value: bson.D{}}},
			mongoerr.Location40414, "BSON field 'aggregate.pipeline' is missing but a required field"},
		{bson.D{{Key: "aggregate", Value: nil}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
			mongoerr.TypeMismatch, "collection name has invalid type: null"},
		{bson.D{{Key: "aggregate", Value: 2.0}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}},
			mongoerr.FailedToParse, "Invalid command format: the 'aggregate' field must specify a collection name or 1"},
	}
	for _, tc := range cases {
		reply := runOn(h, c, "admin", tc.body)
		msg, _ := bsonutil.Field(reply, "errmsg")
		if replyCode(reply) != int32(tc.code) || msg != tc.msg {
			t.Errorf("%v: got %v; want %d %q", tc.body, reply, tc.code, tc.msg)
		}
	}
	if ops := h.deps.Activity.Snapshot(); len(ops) != 0 {
		t.Fatalf("operations still recorded: %+v", ops)
	}
}
