package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

// ixscanOf returns the IXSCAN of a find's executionStats explain.
func ixscanOf(t *testing.T, db *mongo.Database, find bson.D) (bson.D, bson.D) {
	t.Helper()
	ex := explainFind(t, db, find, "executionStats")
	return ex, stageNamed(t, field(t, field(t, ex, "queryPlanner").(bson.D), "winningPlan").(bson.D), "IXSCAN")
}

// On an index no document stored an array in, a compound index takes
// tight bounds on every field: only the matching keys are examined.
func TestCompoundBoundsOnNonMultikeyIndex(t *testing.T) {
	db := newDB(t)
	c := db.Collection("events")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []any
	for u := 0; u < 10; u++ {
		for i := 0; i < 30; i++ {
			docs = append(docs, bson.D{{Key: "user", Value: fmt.Sprintf("u%d", u)}, {Key: "at", Value: base.Add(time.Duration(i) * time.Hour)}})
		}
	}
	if _, err := c.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	mustCreateIndex(t, db, "events", keySpec(bson.D{{Key: "user", Value: 1}, {Key: "at", Value: -1}}))
	since := base.Add(25 * time.Hour)
	find := bson.D{{Key: "find", Value: "events"}, {Key: "filter", Value: bson.D{
		{Key: "user", Value: bson.D{{Key: "$in", Value: bson.A{"u3", "u7"}}}},
		{Key: "at", Value: bson.D{{Key: "$gte", Value: since}}},
	}}}
	ex, ix := ixscanOf(t, db, find)
	// 5 hours (25..29) for each of the 2 users, and no other key.
	wantCounts(t, ex, 10, 10, 10)
	if field(t, ix, "isMultiKey") != false || fmt.Sprint(field(t, ix, "multiKeyPaths")) != `{"user":[],"at":[]}` {
		t.Fatalf("multikey fields: %v", ix)
	}
	want := `user: ["u3", "u3"], ["u7", "u7"]; at: [new Date(9223372036854775807), new Date(1767315600000)]`
	if got := bounds(t, ix); got != want {
		t.Fatalf("bounds %s", got)
	}

	// Both sides of a range on one field meet in one interval.
	between := bson.D{{Key: "find", Value: "events"}, {Key: "filter", Value: bson.D{
		{Key: "user", Value: "u1"},
		{Key: "at", Value: bson.D{{Key: "$gt", Value: base.Add(10 * time.Hour)}, {Key: "$lte", Value: base.Add(12 * time.Hour)}}},
	}}}
	ex, _ = ixscanOf(t, db, between)
	wantCounts(t, ex, 2, 2, 2)

	// One array makes the index multikey for good: the range keeps one
	// side, as mongod does, and the answer stays right.
	insertDocs(t, c, bson.D{{Key: "user", Value: "u1"}, {Key: "at", Value: bson.A{base.Add(11 * time.Hour), base.Add(90 * time.Hour)}}})
	ex, ix = ixscanOf(t, db, between)
	if field(t, ix, "isMultiKey") != true || fmt.Sprint(field(t, ix, "multiKeyPaths")) != `{"user":[],"at":["at"]}` {
		t.Fatalf("after an array: %v", ix)
	}
	if n := toInt64(field(t, execStats(t, ex), "nReturned")); n != 3 {
		t.Fatalf("nReturned %d, want 3", n)
	}
}

// Multikey paths name the prefix that held the array, survive a restart,
// and an index built over existing arrays starts out multikey.
func TestMultikeyPathsPersisted(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, app.Config{DataDir: dir})
	db := connect(t, s).Database("test")
	c := db.Collection("m")
	mustCreateIndex(t, db, "m", keySpec(bson.D{{Key: "a.b", Value: 1}, {Key: "n", Value: 1}}))
	insertDocs(t, c, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "n", Value: 1}})
	find := bson.D{{Key: "find", Value: "m"}, {Key: "filter", Value: bson.D{{Key: "a.b", Value: 1}}}}
	if _, ix := ixscanOf(t, db, find); field(t, ix, "isMultiKey") != false {
		t.Fatalf("no array yet: %v", ix)
	}
	insertDocs(t, c, bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 2}}}}, {Key: "n", Value: 2}})
	insertDocs(t, c, bson.D{{Key: "tags", Value: bson.A{"x", "y"}}})
	mustCreateIndex(t, db, "m", keySpec(bson.D{{Key: "tags", Value: 1}}))
	s.stop(t)

	s = startServer(t, app.Config{DataDir: dir})
	db = connect(t, s).Database("test")
	_, ix := ixscanOf(t, db, find)
	if field(t, ix, "isMultiKey") != true || fmt.Sprint(field(t, ix, "multiKeyPaths")) != `{"a.b":["a"],"n":[]}` {
		t.Fatalf("after restart: %v", ix)
	}
	_, ix = ixscanOf(t, db, bson.D{{Key: "find", Value: "m"}, {Key: "filter", Value: bson.D{{Key: "tags", Value: "x"}}}})
	if field(t, ix, "isMultiKey") != true || fmt.Sprint(field(t, ix, "multiKeyPaths")) != `{"tags":["tags"]}` {
		t.Fatalf("index built over an array: %v", ix)
	}
}
