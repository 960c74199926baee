package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestHostileAggregateArguments sends the aggregate shapes that used to
// panic a handler and leave its currentOp record active.
func TestHostileAggregateArguments(t *testing.T) {
	admin := connect(t, startServer(t, app.Config{})).Database("admin")
	cases := []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, 73, "{aggregate: 1} is not valid for an empty pipeline."},
		{bson.D{{Key: "aggregate", Value: 1}, {Key: "cursor", Value: bson.D{}}}, 40414, "BSON field 'aggregate.pipeline' is missing but a required field"},
		{bson.D{{Key: "aggregate", Value: nil}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, 14, "collection name has invalid type: null"},
	}
	for _, c := range cases {
		ce := cmdErr(t, admin, c.cmd)
		if ce.Code != c.code || ce.Message != c.msg {
			t.Errorf("%v: got %d %q; want %d %q", c.cmd, ce.Code, ce.Message, c.code, c.msg)
		}
	}
	ops := runCmd(t, admin, bson.D{{Key: "currentOp", Value: 1}})
	for _, op := range field(t, ops, "inprog").(bson.A) {
		cmd, _ := field(t, op.(bson.D), "command").(bson.D)
		if len(cmd) > 0 && cmd[0].Key == "aggregate" {
			t.Errorf("an aggregate is still in currentOp: %v", op)
		}
	}
}
