package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestAggregateStageReadConcern: an aggregate whose stage does not take
// the read concern level is refused before it runs, in mongod's words,
// and nothing is written.
func TestAggregateStageReadConcern(t *testing.T) {
	h, c := newTestHandler(t)
	runOn(h, c, "test", bson.D{{Key: "insert", Value: "src"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	reply := runOn(h, c, "test", bson.D{
		{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "dst"}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}},
	})
	want := `Command aggregate does not support { readConcern: { level: "linearizable", provenance: "clientSupplied" } } :: caused by :: $out cannot be used with a 'linearizable' read concern level`
	if replyCode(reply) != int32(mongoerr.InvalidOptions) || errmsgOf(reply) != want {
		t.Fatalf("reply %v, want (%d) %s", reply, mongoerr.InvalidOptions, want)
	}
	if h.deps.Store.Collection("test", "dst") != nil {
		t.Error("the refused $out created its collection")
	}
}
