package aggregate

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestAtlasSearchStagesRefused: every Atlas Search stage is refused with
// SearchNotEnabled naming Atlas, wherever it stands, and none is a stage
// Mayfly runs.
func TestAtlasSearchStagesRefused(t *testing.T) {
	for _, name := range AtlasSearchStageNames() {
		if _, runs := stageParsers()[name]; runs {
			t.Errorf("%s is both refused and run", name)
		}
		for _, p := range []bson.A{
			{bson.D{{Key: name, Value: bson.D{}}}},
			{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: name, Value: bson.D{}}}},
		} {
			_, err := Parse(p, Options{})
			if errCode(err) != mongoerr.SearchNotEnabled || !strings.Contains(err.Error(), "Atlas") {
				t.Errorf("%s in %v: %v, want SearchNotEnabled naming Atlas", name, p, err)
			}
		}
	}
	if n := len(AtlasSearchStageNames()); n != 4 {
		t.Errorf("%d Atlas Search stages, want mongod's 4 ($search, $searchMeta, $vectorSearch, $listSearchIndexes)", n)
	}
}
