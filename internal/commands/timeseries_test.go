package commands

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

var tsT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// weatherHandler has test.weather, a time-series collection expiring after
// an hour, holding one measurement per sensor at t0-50min and t0-10min.
func weatherHandler(t *testing.T) (*Handler, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(tsT0)
	h, _ := newClockedHandler(t, clk)
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "weather"},
		{Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "ts"}, {Key: "metaField", Value: "meta"}, {Key: "granularity", Value: "minutes"}}},
		{Key: "expireAfterSeconds", Value: 3600}})
	docs := bson.A{}
	for _, ago := range []time.Duration{50 * time.Minute, 10 * time.Minute} {
		for _, sensor := range []string{"a", "b"} {
			docs = append(docs, bson.D{{Key: "ts", Value: bson.NewDateTimeFromTime(tsT0.Add(-ago))},
				{Key: "meta", Value: bson.D{{Key: "sensor", Value: sensor}}}, {Key: "temp", Value: 20.5}})
		}
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "weather"}, {Key: "documents", Value: docs}})
	return h, clk
}

func countWeather(t *testing.T, h *Handler) int {
	t.Helper()
	return len(firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "weather"}})))
}

func TestTimeseriesExpiryIsExactPerMeasurement(t *testing.T) {
	h, clk := weatherHandler(t)
	if n := countWeather(t, h); n != 4 {
		t.Fatalf("found %d measurements, want 4", n)
	}
	first := tsDoc(t, firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "weather"}}))[0])
	if _, ok := tsField(first, "_id").(bson.ObjectID); !ok {
		t.Fatalf("measurement has no generated ObjectId _id: %v", first)
	}
	clk.Advance(20 * time.Minute) // the 50-minute-old ones pass the hour
	if n := countWeather(t, h); n != 2 {
		t.Fatalf("after 20 min found %d measurements, want 2", n)
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: "off"}})
	if n := countWeather(t, h); n != 4 {
		t.Fatalf("with expiry off found %d measurements, want the 4 not yet deleted", n)
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "weather"}, {Key: "expireAfterSeconds", Value: 60}})
	if n := countWeather(t, h); n != 0 {
		t.Fatalf("with a minute's expiry found %d measurements, want 0", n)
	}
}

func TestTimeseriesAggregateAndDeleteByMeta(t *testing.T) {
	h, _ := weatherHandler(t)
	from := bson.NewDateTimeFromTime(tsT0.Add(-30 * time.Minute))
	out := firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "aggregate", Value: "weather"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: from}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$meta.sensor"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}}, {Key: "cursor", Value: bson.D{}}}))
	if len(out) != 2 || tsField(tsDoc(t, out[0]), "n") != int32(1) {
		t.Fatalf("grouped recent measurements: %v", out)
	}
	reply := mustCall(t, h, "test", bson.D{{Key: "delete", Value: "weather"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "meta.sensor", Value: "a"}}}, {Key: "limit", Value: 0}}}}})
	if n, _ := bsonutil.Field(reply, "n"); n != int32(2) {
		t.Fatalf("delete by meta: %v", reply)
	}
	if n := countWeather(t, h); n != 2 {
		t.Fatalf("found %d measurements after the delete, want 2", n)
	}
}

func tsField(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}

func TestTimeseriesErrorsAndListing(t *testing.T) {
	h, _ := weatherHandler(t)
	for _, d := range []bson.D{{{Key: "temp", Value: 1}}, {{Key: "ts", Value: "yesterday"}}} {
		reply := mustCall(t, h, "test", bson.D{{Key: "insert", Value: "weather"}, {Key: "documents", Value: bson.A{d}}})
		we, _ := bsonutil.Field(reply, "writeErrors")
		if we == nil {
			t.Fatalf("insert of %v accepted", d)
		}
		e := tsDoc(t, we.(bson.A)[0])
		if tsField(e, "code") != int32(mongoerr.BadValue) || tsField(e, "errmsg") != "'ts' must be present and contain a valid BSON UTC datetime value" {
			t.Fatalf("insert of %v: %v", d, e)
		}
	}
	_, err := call(t, h, "test", bson.D{{Key: "collMod", Value: "weather"}, {Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "seconds"}}}})
	if mongoerr.As(err).Code != mongoerr.InvalidOptions {
		t.Fatalf("finer granularity: %v", err)
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "weather"}, {Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "hours"}}}})
	info := tsDoc(t, firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listCollections", Value: 1}}))[0])
	opts := tsField(info, "options").(bson.D)
	want := bson.D{{Key: "timeField", Value: "ts"}, {Key: "metaField", Value: "meta"}, {Key: "granularity", Value: "hours"}, {Key: "bucketMaxSpanSeconds", Value: int32(2592000)}}
	if tsField(info, "type") != "timeseries" || bsonutil.Compare(tsField(opts, "timeseries"), want) != 0 || tsField(opts, "expireAfterSeconds") != int64(3600) {
		t.Fatalf("listCollections entry: %v", info)
	}
	ixs := firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "weather"}}))
	if len(ixs) != 1 {
		t.Fatalf("listIndexes shows the internal time index: %v", ixs)
	}
	_, err = call(t, h, "test", bson.D{{Key: "create", Value: "w2"}, {Key: "timeseries", Value: bson.D{{Key: "metaField", Value: "m"}}}})
	if mongoerr.As(err).Code != mongoerr.Location40414 {
		t.Fatalf("create without timeField: %v", err)
	}
	_, err = call(t, h, "test", bson.D{{Key: "create", Value: "w3"}, {Key: "expireAfterSeconds", Value: 10}})
	if mongoerr.As(err).Code != mongoerr.InvalidOptions {
		t.Fatalf("expireAfterSeconds without timeseries: %v", err)
	}
}

// tsDoc decodes a reply's document, raw or not.
func tsDoc(t *testing.T, v any) bson.D {
	t.Helper()
	if d, ok := v.(bson.D); ok {
		return d
	}
	var d bson.D
	if err := bson.Unmarshal(v.(bson.Raw), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTimeseriesRefusesWhatWouldBreakIt(t *testing.T) {
	h, _ := weatherHandler(t)
	_, err := call(t, h, "test", bson.D{{Key: "createIndexes", Value: "weather"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "ts", Value: 1}}}, {Key: "name", Value: "ts_1"}, {Key: "expireAfterSeconds", Value: 5}}}}})
	if mongoerr.As(err).Code != mongoerr.InvalidOptions {
		t.Fatalf("TTL index on a time-series collection: %v", err)
	}
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "weather"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "meta.sensor", Value: 1}, {Key: "ts", Value: -1}}}, {Key: "name", Value: "sensor_ts"}}}}})
	_, err = call(t, h, "test", bson.D{{Key: "aggregate", Value: "weather"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$out", Value: "weather"}}}}, {Key: "cursor", Value: bson.D{}}})
	if mongoerr.As(err).Code != mongoerr.InvalidOptions {
		t.Fatalf("$out over a time-series collection: %v", err)
	}
	_, err = call(t, h, "test", bson.D{{Key: "dropIndexes", Value: "weather"}, {Key: "index", Value: bson.D{{Key: "ts", Value: 1}}}})
	if mongoerr.As(err).Code != mongoerr.IndexNotFound {
		t.Fatalf("dropping the internal index by key: %v", err)
	}
	_, err = call(t, h, "test", bson.D{{Key: "collMod", Value: "weather"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "ts", Value: 1}}}, {Key: "expireAfterSeconds", Value: 1}}}})
	if mongoerr.As(err).Code != mongoerr.IndexNotFound {
		t.Fatalf("collMod of the internal index by key: %v", err)
	}
	_, err = call(t, h, "test", bson.D{{Key: "createIndexes", Value: "other"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: timeseries.IndexName}}}}})
	if mongoerr.As(err).Code != mongoerr.CannotCreateIndex {
		t.Fatalf("an index named as the internal one: %v", err)
	}
	mustCall(t, h, "test", bson.D{{Key: "dropIndexes", Value: "weather"}, {Key: "index", Value: "*"}})
	if n := countWeather(t, h); n != 4 {
		t.Fatalf("found %d measurements, want 4", n)
	}
	_, err = call(t, h, "test", bson.D{{Key: "dropIndexes", Value: "weather"}, {Key: "index", Value: timeseries.IndexName}})
	if mongoerr.As(err).Code != mongoerr.IndexNotFound {
		t.Fatalf("dropping the internal index: %v", err)
	}
	reply := mustCall(t, h, "test", bson.D{{Key: "update", Value: "weather"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$unset", Value: bson.D{{Key: "ts", Value: ""}}}}}}}}})
	if we, _ := bsonutil.Field(reply, "writeErrors"); we == nil {
		t.Fatalf("an update removing the time: %v", reply)
	}
}

func TestTimeseriesBucketingOptions(t *testing.T) {
	h, _ := newTestHandler(t)
	create := func(name string, ts bson.D) error {
		_, err := call(t, h, "test", bson.D{{Key: "create", Value: name}, {Key: "timeseries", Value: append(bson.D{{Key: "timeField", Value: "t"}}, ts...)}})
		return err
	}
	if err := create("custom", bson.D{{Key: "bucketMaxSpanSeconds", Value: 600}, {Key: "bucketRoundingSeconds", Value: 600}}); err != nil {
		t.Fatal(err)
	}
	info := tsDoc(t, firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listCollections", Value: 1}}))[0])
	want := bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketRoundingSeconds", Value: int32(600)}, {Key: "bucketMaxSpanSeconds", Value: int32(600)}}
	if bsonutil.Compare(tsField(tsField(info, "options").(bson.D), "timeseries"), want) != 0 {
		t.Fatalf("custom bucketing listed as %v", info)
	}
	for _, bad := range []bson.D{
		{{Key: "bucketMaxSpanSeconds", Value: 600}},
		{{Key: "bucketMaxSpanSeconds", Value: 600}, {Key: "bucketRoundingSeconds", Value: 60}},
		{{Key: "granularity", Value: "hours"}, {Key: "bucketMaxSpanSeconds", Value: 3600}},
		{{Key: "metaField", Value: "t"}},
	} {
		if err := create("bad", bad); mongoerr.As(err).Code != mongoerr.InvalidOptions {
			t.Fatalf("create with %v: %v", bad, err)
		}
	}
	if err := create("bad", bson.D{{Key: "granularity", Value: "days"}}); mongoerr.As(err).Code != mongoerr.BadValue {
		t.Fatalf("granularity days: %v", err)
	}
}
