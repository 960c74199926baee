package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestReplSetTimeseries: a time-series collection, its options and its
// collMod reach the secondary, which returns no expired measurement.
func TestReplSetTimeseries(t *testing.T) {
	rs := startReplSet(t, 2)
	c := rs.client()
	ctx := ctxT(t)
	db := c.Database("test")
	ts := options.TimeSeries().SetTimeField("ts").SetMetaField("meta")
	if err := db.CreateCollection(ctx, "weather", options.CreateCollection().SetTimeSeriesOptions(ts).SetExpireAfterSeconds(7200)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	docs := []any{}
	for _, ago := range []time.Duration{10 * time.Minute, 90 * time.Minute, 3 * time.Hour} {
		docs = append(docs, bson.D{{Key: "ts", Value: now.Add(-ago)}, {Key: "meta", Value: "north"}})
	}
	if _, err := db.Collection("weather").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: 3600}}).Err(); err != nil {
		t.Fatal(err)
	}
	primary := rs.waitPrimary(-1, 10*time.Second)
	secondary := 1 - primary
	rs.waitSameHash("test", 10*time.Second)
	sdb := rs.direct(secondary).Database("test")
	deadline := time.Now().Add(10 * time.Second)
	for {
		specs, err := sdb.ListCollectionSpecifications(ctx, bson.D{})
		if err == nil && len(specs) == 1 && specs[0].Type == "timeseries" && specs[0].Options.Lookup("expireAfterSeconds").Int64() == 3600 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("secondary's listCollections: %+v %v", specs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	coll := sdb.Collection("weather", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("secondary counts %d measurements (%v), want the 1 within the hour", n, err)
	}
}
