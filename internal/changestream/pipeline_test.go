package changestream

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestChangeStreamPipelineStages: after $changeStream, every stage Mayfly
// knows is taken or refused as mongod does (IllegalOperation naming it,
// 40602 for a second $changeStream), and a stage nobody knows is
// unrecognized (40324) even behind a refused one, as mongod parses every
// stage before it checks where they may stand.
func TestChangeStreamPipelineStages(t *testing.T) {
	known := append(append(aggregate.StageNames(), aggregate.AtlasSearchStageNames()...), aggregate.CommandLayerStages...)
	for _, name := range known {
		_, err := Parse("db", "c", bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}, bson.D{{Key: name, Value: bson.D{}}}}, nil)
		code := codeOf(err)
		switch {
		case name == "$changeStream":
			if code != mongoerr.Location40602 {
				t.Errorf("%s: %v, want 40602", name, err)
			}
		case slices.Contains(pipelineStages, name):
			if code == mongoerr.IllegalOperation || code == mongoerr.Location40324 {
				t.Errorf("%s: %v, want it permitted", name, err)
			}
		default:
			want := name + " is not permitted in a $changeStream pipeline"
			if code != mongoerr.IllegalOperation || mongoerr.As(err).Msg != want {
				t.Errorf("%s: %v, want IllegalOperation %q", name, err, want)
			}
		}
	}
	_, err := Parse("db", "c", bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}, bson.D{{Key: "$group", Value: bson.D{}}}, bson.D{{Key: "$unsupported", Value: int32(1)}}}, nil)
	if codeOf(err) != mongoerr.Location40324 {
		t.Errorf("an unknown stage behind a refused one: %v, want 40324", err)
	}
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	return mongoerr.As(err).Code
}
