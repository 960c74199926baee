package oplog

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// TestStartOf: a leading $match's ts bound moves the oplog's scan to
// just before the first entry it can pass, and nothing else moves it.
func TestStartOf(t *testing.T) {
	ts := bson.Timestamp{T: 50, I: 3}
	match := func(cond any) bson.A {
		return bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "ts", Value: cond}}}}}
	}
	cases := []struct {
		name   string
		stages bson.A
		want   changestream.Timestamp
	}{
		{"$gt", match(bson.D{{Key: "$gt", Value: ts}}), changestream.Timestamp{T: 50, I: 3}},
		{"$gte", match(bson.D{{Key: "$gte", Value: ts}}), changestream.Timestamp{T: 50, I: 2}},
		{"equal", match(ts), changestream.Timestamp{T: 50, I: 2}},
		{"$gte at increment 0", match(bson.D{{Key: "$gte", Value: bson.Timestamp{T: 50}}}), changestream.Timestamp{T: 49, I: 1<<32 - 1}},
		{"both bounds, the later wins", match(bson.D{{Key: "$gte", Value: bson.Timestamp{T: 10}}, {Key: "$gt", Value: ts}}), changestream.Timestamp{T: 50, I: 3}},
		{"$lt does not move it", match(bson.D{{Key: "$lt", Value: ts}}), changestream.Timestamp{}},
		{"not a timestamp", match(bson.D{{Key: "$gt", Value: int32(5)}}), changestream.Timestamp{}},
		{"not leading", append(bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "ts", Value: 1}}}}}, match(ts)...), changestream.Timestamp{}},
		{"no stages", nil, changestream.Timestamp{}},
		{"mongodump's $and", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: ts}}}},
			bson.D{{Key: "ts", Value: bson.D{{Key: "$lte", Value: bson.Timestamp{T: 90}}}}},
		}}}}}}, changestream.Timestamp{T: 50, I: 2}},
		{"$or does not move it", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: ts}}}}, bson.D{{Key: "op", Value: "i"}},
		}}}}}}, changestream.Timestamp{}},
	}
	for _, c := range cases {
		if got := StartOf(c.stages); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
