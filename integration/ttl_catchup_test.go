package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

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
	setParam := func(name string, v any) { setServerParameter(t, c, name, v) }
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

// TestReplicaSetTTLBacklog is a set's primary behind a backlog spread over
// time: every member ends without the expired documents, and the
// primary's monitor keeps its pace rather than catching up as a
// standalone's does (its batches cost it only their proposals; the
// deletions are every member's apply, which it does not see).
func TestReplicaSetTTLBacklog(t *testing.T) {
	rs := startReplSet(t, 3)
	p := rs.waitPrimary(-1, 15*time.Second)
	c := rs.direct(p)
	ctx := ctxT(t)
	const docs = 6000
	setServerParameter(t, c, "ttlMonitorEnabled", false)
	coll := c.Database("app").Collection("storm")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	first := time.Now().Add(-time.Hour)
	batch := make([]any, docs)
	for i := range batch {
		batch[i] = bson.D{{Key: "_id", Value: i}, {Key: "at", Value: first.Add(time.Duration(i) * 100 * time.Millisecond)}}
	}
	if _, err := coll.InsertMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	before := statusMetric(t, c, "ttl", "catchUpBatches")
	setServerParameter(t, c, "ttlMonitorEnabled", true)
	for i := range rs.addrs {
		m := rs.direct(i).Database("app").Collection("storm", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := m.CountDocuments(ctx, bson.D{})
			if err != nil {
				t.Fatalf("member %d: %v", i, err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d still holds %d of the %d expired documents after 30 s", i, n, docs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n := statusMetric(t, c, "ttl", "catchUpBatches") - before; n != 0 {
		t.Fatalf("the primary's monitor caught up in %d batches, want none: it paces", n)
	}
}

// setServerParameter sets a runtime parameter of the server c talks to.
func setServerParameter(t *testing.T, c *mongo.Client, name string, v any) {
	t.Helper()
	mustDo(t, func() error {
		return c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}}).Err()
	})
}
