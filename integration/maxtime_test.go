package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestAggregateHonoursMaxTimeMS(t *testing.T) {
	db := newDB(t)
	docs := make([]any, 20000)
	for i := range docs {
		docs[i] = bson.D{{Key: "g", Value: i % 100}, {Key: "v", Value: i}}
	}
	if _, err := db.Collection("big").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	ce := cmdErr(t, db, bson.D{
		{Key: "aggregate", Value: "big"},
		{Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "s", Value: -1}}}},
		}},
		{Key: "cursor", Value: bson.D{}},
		{Key: "maxTimeMS", Value: 1},
	})
	if ce.Code != 50 || ce.Name != "MaxTimeMSExpired" {
		t.Fatalf("want 50 MaxTimeMSExpired, got %d %s %q", ce.Code, ce.Name, ce.Message)
	}
	// Without the limit the same pipeline answers.
	reply := runCmd(t, db, bson.D{
		{Key: "aggregate", Value: "big"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}}}}}},
		{Key: "cursor", Value: bson.D{}},
	})
	if n := len(field(t, field(t, reply, "cursor").(bson.D), "firstBatch").(bson.A)); n != 100 {
		t.Fatalf("groups: %d", n)
	}
}
