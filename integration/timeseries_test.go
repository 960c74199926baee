package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestTimeseriesThroughDriver is a weather store in a time-series
// collection: measurements expire one by one by the test clock, a range
// aggregate groups by sensor, and deleteMany works by meta and by time.
func TestTimeseriesThroughDriver(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	db := c.Database("test")
	ts := options.TimeSeries().SetTimeField("ts").SetMetaField("meta").SetGranularity("hours")
	if err := db.CreateCollection(ctx, "weather", options.CreateCollection().SetTimeSeriesOptions(ts).SetExpireAfterSeconds(86400)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("weather")
	now := time.Now().UTC().Truncate(time.Millisecond)
	var docs []any
	for h := 0; h < 4; h++ { // 0, 10, 20 and 30 hours old
		for _, sensor := range []string{"north", "south"} {
			docs = append(docs, bson.D{{Key: "ts", Value: now.Add(-time.Duration(10*h) * time.Hour)}, {Key: "meta", Value: bson.D{{Key: "sensor", Value: sensor}}}, {Key: "temp", Value: 10 + h}})
		}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 6 {
		t.Fatalf("%d measurements within a day, want 6 (the 30-hour-old ones are past expiry)", n)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "meta", Value: "x"}})
	wantCode(t, err, int32(mongoerr.BadValue), "'ts' must be present and contain a valid BSON UTC datetime value")

	cur, err := coll.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: now.Add(-15 * time.Hour)}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$meta.sensor"}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$temp"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		ID  string  `bson:"_id"`
		Avg float64 `bson:"avg"`
	}
	if err := cur.All(ctx, &groups); err != nil || len(groups) != 2 || groups[0].ID != "north" || groups[0].Avg != 10.5 {
		t.Fatalf("groups %+v, %v", groups, err)
	}

	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "weather"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	opts := specs[0].Options
	if specs[0].Type != "timeseries" || opts.Lookup("expireAfterSeconds").Int64() != 86400 || opts.Lookup("timeseries", "granularity").StringValue() != "hours" {
		t.Fatalf("listCollections: %+v", specs[0])
	}

	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: 3600 * 12}}).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 4 {
		t.Fatalf("%d measurements within 12 hours, want 4", n)
	}
	if r, err := coll.DeleteMany(ctx, bson.D{{Key: "meta.sensor", Value: "south"}}); err != nil || r.DeletedCount != 2 {
		t.Fatalf("deleteMany by meta: %v %v", r, err)
	}
	if r, err := coll.DeleteMany(ctx, bson.D{{Key: "ts", Value: bson.D{{Key: "$lt", Value: now.Add(-time.Hour)}}}}); err != nil || r.DeletedCount != 1 {
		t.Fatalf("deleteMany by time: %v %v", r, err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: 13 * 3600}}).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for storedDocs(t, coll) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the TTL monitor left an expired measurement")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) != 0 {
		t.Fatalf("after drop: %v %v", names, err)
	}
}

// TestPymongoTimeseries runs the weather store through pymongo.
func TestPymongoTimeseries(t *testing.T) {
	runClockScript(t, "pymongo", "pymongo_timeseries.py", "pymongo timeseries ok")
}

// TestMongoshTimeseries runs the README's weather store in mongosh.
func TestMongoshTimeseries(t *testing.T) {
	runClockScript(t, "mongosh", "mongosh_timeseries.js", "mongosh timeseries ok")
}
