package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// orphanExpiryDocs is how many expiring documents TestOrphanExpiryShowsOneDelete
// moves: enough that both shards held some before the moves.
const orphanExpiryDocs = 20

// TestOrphanExpiryShowsOneDelete: documents with a TTL date in chunks
// that moved from shA to shB, their copies left on shA as orphans (an
// hour's orphanCleanupDelaySecs), expire; both shards' TTL monitors
// delete their copy, and a change stream through the router shows
// exactly one delete of each document.
func TestOrphanExpiryShowsOneDelete(t *testing.T) {
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, 1, "--shardsvr", "--setParameter", "orphanCleanupDelaySecs=3600")
	}
	c.router = startRouter(t, "cfg/"+c.config.addrs[0])
	cl := c.client()
	// The moves are the test's own: the balancer would move chunks back.
	runCmd(t, cl.Database("admin"), bson.D{{Key: "balancerStop", Value: 1}})
	addShardsAndShard(t, c, cl, "test", "orph")
	coll := cl.Database("test").Collection("orph")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	stream, err := coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close(context.Background())
	// Long enough for the moves on a loaded machine; the moves are
	// checked to have ended before it.
	const lifetime = 20 * time.Second
	expireAt := time.Now().Add(lifetime)
	docs := make([]any, orphanExpiryDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "expireAt", Value: bson.NewDateTimeFromTime(expireAt)}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	orphans := shardStoredCount(t, c, "shA", "orph")
	if orphans == 0 {
		t.Fatal("shA holds none of the documents: nothing would be left as an orphan")
	}
	moveAllTo(t, cl, "test.orph", "shB")
	if time.Now().After(expireAt) {
		t.Fatalf("the moves ended after the documents expired (%v late): the test proves nothing", time.Since(expireAt))
	}
	if n := shardStoredCount(t, c, "shA", "orph"); n != orphans {
		t.Fatalf("shA stores %d documents after the moves, want its %d orphans", n, orphans)
	}
	waitStoredNone(t, c, "orph")
	sentinel := int32(orphanExpiryDocs)
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: sentinel}}); err != nil {
		t.Fatal(err)
	}
	deletes := deletesUntil(t, stream, sentinel)
	for id := range int32(orphanExpiryDocs) {
		if deletes[id] != 1 {
			t.Errorf("_id %d: %d deletes in the stream, want 1", id, deletes[id])
		}
	}
}

// moveAllTo moves every chunk of ns to shard.
func moveAllTo(t *testing.T, cl *mongo.Client, ns, shard string) {
	t.Helper()
	for _, ch := range chunks(t, cl, ns) {
		if ch.Shard == shard {
			continue
		}
		runCmd(t, cl.Database("admin"), bson.D{{Key: "moveChunk", Value: ns},
			{Key: "bounds", Value: bson.A{ch.Min, ch.Max}}, {Key: "to", Value: shard}})
	}
}

// waitStoredNone waits until neither shard stores a document of
// test.<coll>: every copy, owned or orphan, was deleted by its shard's
// TTL monitor (the range deleter waits an hour).
func waitStoredNone(t *testing.T, c *routedCluster, coll string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for _, shard := range shardNames() {
		for {
			n := shardStoredCount(t, c, shard, coll)
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still stores %d documents of %s", shard, n, coll)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// deletesUntil counts the stream's deletes by _id until the insert of
// sentinel, which follows every deletion.
func deletesUntil(t *testing.T, stream *mongo.ChangeStream, sentinel int32) map[int32]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	deletes := map[int32]int{}
	for stream.Next(ctx) {
		var ev streamEvent
		if err := stream.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Op == "insert" && ev.Key.ID == sentinel:
			return deletes
		case ev.Op == "delete":
			deletes[ev.Key.ID]++
		}
	}
	t.Fatalf("the stream ended before the sentinel insert: %v", stream.Err())
	return nil
}

// TestOldPrimaryReadsPlacementAgainWhenElected: shA's primary caches
// the collection's placement, steps down, and its successor gives every
// chunk to shB; then the old primary is elected again. It must read the
// placement anew: trusting what it cached in its earlier primacy, it
// expired the orphans as their owner, so each document was deleted
// twice in the stream (once by shA, once by shB). The stream shows one
// delete of each.
func TestOldPrimaryReadsPlacementAgainWhenElected(t *testing.T) {
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	c.shards["shA"] = startNamedReplSet(t, "shA", 3, "--shardsvr", "--setParameter", "orphanCleanupDelaySecs=3600")
	c.shards["shB"] = startNamedReplSet(t, "shB", 1, "--shardsvr", "--setParameter", "orphanCleanupDelaySecs=3600")
	c.router = startRouter(t, "cfg/"+c.config.addrs[0])
	cl := c.client()
	runCmd(t, cl.Database("admin"), bson.D{{Key: "balancerStop", Value: 1}})
	addShardsAndShard(t, c, cl, "test", "orph")
	coll := cl.Database("test").Collection("orph")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	stream, err := coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close(context.Background())
	// Long enough for two elections and the moves on a loaded machine;
	// checked below.
	const lifetime = 40 * time.Second
	expireAt := time.Now().Add(lifetime)
	docs := make([]any, orphanExpiryDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "expireAt", Value: bson.NewDateTimeFromTime(expireAt)}}
	}
	// Routed inserts: shA's primary caches the placement they carry.
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	shA := c.shards["shA"]
	old := shA.waitPrimary(-1, 15*time.Second)
	stepDown(t, shA, old, 2)
	successor := shA.waitPrimary(old, 30*time.Second)
	moveAllTo(t, cl, "test.orph", "shB")
	// The third member may not stand: the old primary is the one left.
	third := 3 - old - successor
	runCmd(t, shA.direct(third).Database("admin"), bson.D{{Key: "replSetFreeze", Value: 300}})
	stepDown(t, shA, successor, 300)
	// The step-down may hand over to the frozen member, which then
	// yields to the one member that may lead.
	if err := retryFor(30*time.Second, func() error {
		if !isPrimary(shA.addrs[old]) {
			return fmt.Errorf("member %d is not primary", old)
		}
		return nil
	}); err != nil {
		t.Fatalf("the old primary was not elected again: %v", err)
	}
	if time.Now().After(expireAt) {
		t.Fatalf("the moves and elections ended after the documents expired (%v late): the test proves nothing", time.Since(expireAt))
	}
	waitStoredNone(t, c, "orph")
	sentinel := int32(orphanExpiryDocs)
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: sentinel}}); err != nil {
		t.Fatal(err)
	}
	deletes := deletesUntil(t, stream, sentinel)
	for id := range int32(orphanExpiryDocs) {
		if deletes[id] != 1 {
			t.Errorf("_id %d: %d deletes in the stream, want 1", id, deletes[id])
		}
	}
}

// stepDown steps member i of rs down for secs seconds; the reply may be
// lost with the connections a stepping-down member closes.
func stepDown(t *testing.T, rs *replSet, i int, secs int) {
	t.Helper()
	cl := rs.direct(i)
	defer func() { _ = cl.Disconnect(context.Background()) }()
	err := cl.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetStepDown", Value: secs},
		{Key: "secondaryCatchUpPeriodSecs", Value: 1}}).Err()
	if err != nil && !mongo.IsNetworkError(err) {
		t.Fatalf("replSetStepDown on member %d: %v", i, err)
	}
}
