package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestKill9DuringExpiryStorm kills the server while its TTL monitor is
// deleting a storm of documents that expired at the same moment. After the
// restart no expired document is visible, validate is clean, and the
// monitor finishes deleting them.
func TestKill9DuringExpiryStorm(t *testing.T) {
	const storm, live = 60000, 100
	bin := buildBinary(t)
	dir, addr := t.TempDir(), freePort(t)
	p := startBinary(t, bin, dir, addr)
	db := p.client(t).Database("storm")
	createTTL(t, db, "events", "at", 0)
	coll := db.Collection("events", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	ctx := ctxT(t)
	expireAt := time.Now().Add(6 * time.Second)
	for start := 0; start < storm; start += 1000 {
		docs := make([]any, 0, 1000)
		for i := start; i < start+1000; i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: expireAt}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < live; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: storm + i}, {Key: "at", Value: time.Now().Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
	}
	if time.Now().After(expireAt) {
		t.Fatal("loading the storm took longer than its expiry delay; the kill would not land mid-storm")
	}
	deletedBeforeKill := waitDeleting(t, db)
	p.kill9()
	t.Logf("killed after the monitor had deleted %d of %d", deletedBeforeKill, storm)

	p2 := startBinary(t, bin, dir, addr)
	db2 := p2.client(t).Database("storm")
	if n, err := db2.Collection("events").CountDocuments(ctx, bson.D{}); err != nil || n != live {
		t.Fatalf("after the crash %d documents are visible, want the %d live ones (%v)", n, live, err)
	}
	reply := runCmd(t, db2, bson.D{{Key: "validate", Value: "events"}})
	if field(t, reply, "valid") != true {
		t.Fatalf("validate after the crash: %v", reply)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := storedCount(t, db2.Collection("events")); n != live; n = storedCount(t, db2.Collection("events")) {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor left %d expired documents stored 30 s after the restart", n-live)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitDeleting returns once the monitor has begun deleting the storm, so
// the kill lands in the middle of it.
func waitDeleting(t *testing.T, db *mongo.Database) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n := ttlDeleted(t, db); n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatal("the monitor never started deleting the storm")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// storedCount is the number of documents physically stored, expired ones
// included ($collStats counts storage, not what readers see).
func storedCount(t *testing.T, coll *mongo.Collection) int64 {
	t.Helper()
	cur, err := coll.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctxT(t), &out); err != nil || len(out) != 1 {
		t.Fatalf("$collStats: %v %v", out, err)
	}
	return out[0]["count"].(int64)
}
