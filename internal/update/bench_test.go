package update

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkApplySetDate is the hot path of a TTL session store: touching
// a session's access time.
func BenchmarkApplySetDate(b *testing.B) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	doc := bson.D{
		{Key: "_id", Value: bson.NewObjectID()},
		{Key: "token", Value: "0f9c2e7d6b5a4c3e2f1a0b9c8d7e6f5a"},
		{Key: "userID", Value: int64(42)},
		{Key: "accessTime", Value: bson.NewDateTimeFromTime(now.Add(-time.Minute))},
	}
	u, err := Parse(bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: bson.NewDateTimeFromTime(now)}}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := Context{Now: now, Positional: -1}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := u.Apply(doc, ctx); err != nil {
			b.Fatal(err)
		}
	}
}
