package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// TestFindReturnKey: returnKey answers each document's key in the index
// the plan reads, {} for a collection scan, and neither the projection
// nor showRecordId's $recordId adds to it.
func TestFindReturnKey(t *testing.T) {
	h, c := newTestHandler(t)
	runOn(h, c, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "x", Value: int32(11)}, {Key: "y", Value: "a"}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "y", Value: "b"}},
	}}})
	runOn(h, c, "test", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: int32(1)}}}, {Key: "name", Value: "x_1"}},
	}}})
	for _, tc := range []struct {
		name  string
		extra bson.D
		want  string
	}{
		{"the _id index", bson.D{{Key: "sort", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "showRecordId", Value: true}}, `[{"_id": 1}, {"_id": 2}]`},
		{"a secondary index", bson.D{{Key: "hint", Value: "x_1"}, {Key: "projection", Value: bson.D{{Key: "y", Value: int32(1)}}}}, `[{"x": null}, {"x": 11}]`},
		{"a collection scan", bson.D{{Key: "hint", Value: bson.D{{Key: "$natural", Value: int32(1)}}}}, `[{}, {}]`},
	} {
		body := append(bson.D{{Key: "find", Value: "c"}, {Key: "returnKey", Value: true}}, tc.extra...)
		got := firstBatch(t, runOn(h, c, "test", body))
		var want bson.A
		if err := bson.UnmarshalExtJSON([]byte(`{"a": `+tc.want+`}`), false, &struct{ A *bson.A }{&want}); err != nil {
			t.Fatal(err)
		}
		if bsonutil.Compare(got, want) != 0 {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}
