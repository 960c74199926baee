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
	// Long enough for the moves on a loaded machine; the moves are
	// checked to have ended before it.
	o := startOrphanExpiry(t, 1, 20*time.Second)
	orphans := shardStoredCount(t, o.c, "shA", "orph")
	if orphans == 0 {
		t.Fatal("shA holds none of the documents: nothing would be left as an orphan")
	}
	moveAllTo(t, o.cl, "test.orph", "shB")
	o.checkNotExpired(t, "the moves")
	if n := shardStoredCount(t, o.c, "shA", "orph"); n != orphans {
		t.Fatalf("shA stores %d documents after the moves, want its %d orphans", n, orphans)
	}
	o.checkOneDeleteEach(t)
}

// orphanExpiry is a cluster of a config server, shA (of some members)
// and shB, whose test.orph is sharded over both and holds
// orphanExpiryDocs documents that expire at expireAt, with a change
// stream on it through the router.
type orphanExpiry struct {
	c        *routedCluster
	cl       *mongo.Client
	coll     *mongo.Collection
	stream   *mongo.ChangeStream
	expireAt time.Time
}

// startOrphanExpiry sets it up; the documents expire lifetime later,
// and the range deleter waits an hour.
func startOrphanExpiry(t *testing.T, shAMembers int, lifetime time.Duration) *orphanExpiry {
	t.Helper()
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	for _, name := range shardNames() {
		members := 1
		if name == "shA" {
			members = shAMembers
		}
		c.shards[name] = startNamedReplSet(t, name, members, "--shardsvr", "--setParameter", "orphanCleanupDelaySecs=3600")
	}
	c.router = startRouter(t, "cfg/"+c.config.addrs[0])
	o := &orphanExpiry{c: c, cl: c.client()}
	// The moves are the test's own: the balancer would move chunks back.
	runCmd(t, o.cl.Database("admin"), bson.D{{Key: "balancerStop", Value: 1}})
	addShardsAndShard(t, c, o.cl, "test", "orph")
	o.coll = o.cl.Database("test").Collection("orph")
	if _, err := o.coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	stream, err := o.coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Close(context.Background()) })
	o.stream = stream
	o.expireAt = time.Now().Add(lifetime)
	docs := make([]any, orphanExpiryDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "expireAt", Value: bson.NewDateTimeFromTime(o.expireAt)}}
	}
	// Routed inserts: the shards' primaries cache the placement they
	// carry.
	if _, err := o.coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	return o
}

// checkNotExpired fails the test when what came before (what) ended
// after the documents expired: the test would prove nothing.
func (o *orphanExpiry) checkNotExpired(t *testing.T, what string) {
	t.Helper()
	if time.Now().After(o.expireAt) {
		t.Fatalf("%s ended after the documents expired (%v late): the test proves nothing", what, time.Since(o.expireAt))
	}
}

// checkOneDeleteEach waits until every copy, owned or orphan, expired,
// then reads the stream up to a sentinel insert: each document must
// show exactly one delete.
func (o *orphanExpiry) checkOneDeleteEach(t *testing.T) {
	t.Helper()
	waitStoredNone(t, o.c, "orph")
	sentinel := int32(orphanExpiryDocs)
	if _, err := o.coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: sentinel}}); err != nil {
		t.Fatal(err)
	}
	deletes := deletesUntil(t, o.stream, sentinel)
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
	// Long enough for two elections and the moves on a loaded machine;
	// checked below.
	o := startOrphanExpiry(t, 3, 40*time.Second)
	shA := o.c.shards["shA"]
	old := shA.waitPrimary(-1, 15*time.Second)
	stepDown(t, shA, old, 2)
	successor := shA.waitPrimary(old, 30*time.Second)
	moveAllTo(t, o.cl, "test.orph", "shB")
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
	o.checkNotExpired(t, "the moves and elections")
	o.checkOneDeleteEach(t)
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
