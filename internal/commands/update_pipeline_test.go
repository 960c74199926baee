package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestUpdatePipelineUnknownStage: an update batch with a pipeline update
// whose stage mongod's lite parse refuses runs its other statements, then
// fails as a command (ok: 0) with the parse's code, as mongod 8.0 does
// when it counts the pipeline's stages after the batch.
func TestUpdatePipelineUnknownStage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stage bson.D
		code  mongoerr.Code
		msg   string
	}{
		{"unknown stage", bson.D{{Key: "$invalidOperator", Value: true}}, mongoerr.Location40324, "Unrecognized pipeline stage name: '$invalidOperator'"},
		{"two fields", bson.D{{Key: "$set", Value: bson.D{}}, {Key: "$unset", Value: "a"}}, mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field."},
	} {
		h, c := newTestHandler(t)
		runOn(h, c, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
		reply := runOn(h, c, "test", bson.D{{Key: "update", Value: "c"}, {Key: "ordered", Value: false}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.A{tc.stage}}},
		}}})
		if replyCode(reply) != int32(tc.code) || errmsgOf(reply) != tc.msg {
			t.Errorf("%s: %v, want (%d) %s", tc.name, reply, tc.code, tc.msg)
		}
		found := runOn(h, c, "test", bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 1}}}})
		if n, _ := bsonutil.Field(found, "n"); bsonutil.ToFloat(n) != 1 {
			t.Errorf("%s: the valid statement did not run: %v", tc.name, found)
		}
	}
}
