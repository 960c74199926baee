package shardmerge

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ForeignNamespaces finds the collection every stage of foreignStages names, in
// each of its spellings and inside nested pipelines; a stage added to the
// table without a row here fails.
func TestForeignNamespacesCoverEveryStage(t *testing.T) {
	other := bson.D{{Key: "db", Value: "o"}, {Key: "coll", Value: "c"}}
	rows := []struct {
		stage    string
		pipeline bson.A
		want     []string
		writes   bool
	}{
		{"$lookup", bson.A{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "f"}, {Key: "as", Value: "x"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$unionWith", Value: "u"}}}}}}}}, []string{"d.f", "d.u"}, false},
		{"$graphLookup", bson.A{bson.D{{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "g"}}}}}, []string{"d.g"}, false},
		{"$unionWith", bson.A{bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "u"}}}}}, []string{"d.u"}, false},
		{"$out", bson.A{bson.D{{Key: "$out", Value: other}}}, []string{"o.c"}, true},
		{"$merge", bson.A{bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "m"}}}}}, []string{"d.m"}, true},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		covered[row.stage] = true
		got, first, writes := ForeignNamespaces("d", row.pipeline)
		if !slices.Equal(got, row.want) || first != row.stage || writes != row.writes {
			t.Errorf("%s: %v %q %v, want %v %q %v", row.stage, got, first, writes, row.want, row.stage, row.writes)
		}
		faceted := bson.A{bson.D{{Key: "$facet", Value: bson.D{{Key: "a", Value: row.pipeline}}}}}
		if got, _, _ := ForeignNamespaces("d", faceted); !slices.Equal(got, row.want) {
			t.Errorf("%s in $facet: %v, want %v", row.stage, got, row.want)
		}
	}
	for stage := range ForeignStages {
		if !covered[stage] {
			t.Errorf("no row for %s", stage)
		}
	}
}
