package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestTTLCatchUp is a real server's TTL monitor behind a backlog: it
// catches up (serverStatus metrics.ttl.catchUpBatches) behind documents
// whose expiries spread over time, as in a storm it fell behind, and
// not behind a burst that expired at one instant or with catching up
// turned off by mayflyTTLCatchUpAfterMS: -1.
func TestTTLCatchUp(t *testing.T) {
	s := startServer(t, app.Config{})
	c := connect(t, s)
	ctx := ctxT(t)
	admin := c.Database("admin")
	setParam := func(name string, v any) {
		t.Helper()
		mustDo(t, func() error {
			return admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}}).Err()
		})
	}
	const docs = 3000
	backlog := func(name string, spacing time.Duration) int64 {
		t.Helper()
		setParam("ttlMonitorEnabled", false)
		coll := c.Database("app").Collection(name)
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
			t.Fatal(err)
		}
		first := time.Now().Add(-time.Hour)
		batch := make([]any, docs)
		for i := range batch {
			batch[i] = bson.D{{Key: "_id", Value: i}, {Key: "at", Value: first.Add(time.Duration(i) * spacing)}}
		}
		if _, err := coll.InsertMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
		before := statusMetric(t, c, "ttl", "catchUpBatches")
		deleted := statusMetric(t, c, "ttl", "deletedDocuments")
		setParam("ttlMonitorEnabled", true)
		deadline := time.Now().Add(30 * time.Second)
		for statusMetric(t, c, "ttl", "deletedDocuments") < deleted+docs {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the monitor did not delete the backlog in 30 s", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return statusMetric(t, c, "ttl", "catchUpBatches") - before
	}
	if n := backlog("storm", time.Second); n < docs/1000 {
		t.Fatalf("behind %d documents expiring a second apart the monitor caught up in %d batches, want every batch (%d)", docs, n, docs/1000)
	}
	if n := backlog("burst", 0); n != 0 {
		t.Fatalf("behind a burst the monitor caught up in %d batches, want none", n)
	}
	setParam("mayflyTTLCatchUpAfterMS", -1)
	if n := backlog("stormOff", time.Second); n != 0 {
		t.Fatalf("with catching up off the monitor caught up in %d batches", n)
	}
}
