package aggregate

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestStageReadConcern: every stage Mayfly knows, under every read
// concern level, is refused exactly where mongod 8.0's stage refuses it
// (its LiteParsed::supportsReadConcern), with the stage's words.
func TestStageReadConcern(t *testing.T) {
	levels := []string{"local", "majority", "available", "linearizable", "snapshot"}
	refused := map[string][]string{
		"$out":               {"linearizable"},
		"$merge":             {"linearizable"},
		"$currentOp":         {"majority", "available", "linearizable", "snapshot"},
		"$listLocalSessions": {"majority", "available", "linearizable", "snapshot"},
	}
	known := append(StageNames(), CommandLayerStages...)
	for name := range readConcernRules() {
		if !slices.Contains(known, name) {
			t.Errorf("readConcernRules names %s, no stage Mayfly knows", name)
		}
	}
	for _, name := range known {
		for _, level := range levels {
			err := CheckReadConcern(bson.A{bson.D{{Key: name, Value: bson.D{}}}}, level)
			want := slices.Contains(refused[name], level)
			if !want && err != nil {
				t.Errorf("%s under %s: %v, want it taken", name, level, err)
			}
			if want && errCode(err) != mongoerr.InvalidOptions {
				t.Errorf("%s under %s: %v, want InvalidOptions", name, level, err)
			}
		}
	}
	err := CheckReadConcern(bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$out", Value: "o"}}}, "linearizable")
	if want := "$out cannot be used with a 'linearizable' read concern level"; err == nil || mongoerr.As(err).Msg != want {
		t.Errorf("$out under linearizable: %v, want %q", err, want)
	}
}
