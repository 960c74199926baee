package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testDropWhileWriting: a sharded collection is dropped through one
// router while a second router, whose routing table still holds the
// dropped incarnation, inserts into it without pause. After each drop
// every document the shards store is visible through the router: no
// shard accepted a write of the dropped incarnation after dropping its
// copy (which would leave documents on a shard that is not the
// database's primary, invisible to every read and back when the name is
// sharded again). The writer's inserts after the drop land in the new,
// unsharded collection.
func testDropWhileWriting(t *testing.T, c *routedCluster, cl *mongo.Client) {
	other := startRouter(t, "cfg/"+c.config.addrs[0])
	ocl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + other + "/").SetRetryWrites(false).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disconnectSoon(ocl) })
	coll := cl.Database("test").Collection("dw")
	stale := ocl.Database("test").Collection("dw")
	for round := 0; round < 5; round++ {
		shardBy(t, cl, "test.dw", "k")
		insertIDs(t, coll, 0, 20)
		if n, err := stale.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 20 {
			t.Fatalf("round %d: the second router counts %d (%v), want 20", round, n, err)
		}
		acked := writeUntilStopped(stale, round)
		time.Sleep(100 * time.Millisecond)
		if err := coll.Drop(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		after := acked()
		if stored, visible := waitAllVisible(t, c, coll); visible != stored {
			t.Fatalf("round %d: the shards store %d documents, the router shows %d: a shard took writes of the dropped collection",
				round, stored, visible)
		}
		if after == 0 {
			t.Fatalf("round %d: the writer had no insert acknowledged", round)
		}
		if err := coll.Drop(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		for _, name := range shardNames() {
			if err := c.shardColl(name, "test", "dw").Drop(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeUntilStopped inserts documents into coll from one goroutine
// until the returned function is called; it answers how many inserts
// were acknowledged.
func writeUntilStopped(coll *mongo.Collection, round int) func() int64 {
	ctx, cancel := context.WithCancel(context.Background())
	var acked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			doc := bson.D{{Key: "k", Value: int32(1000*round + i)}, {Key: "round", Value: round}}
			if _, err := coll.InsertOne(ctx, doc); err == nil {
				acked.Add(1)
			}
		}
	}()
	return func() int64 {
		cancel()
		wg.Wait()
		return acked.Load()
	}
}

// waitAllVisible compares what the shards store of coll with what the
// router shows, until they agree (an insert the writer gave up on may
// still be landing) or 5 s passed.
func waitAllVisible(t *testing.T, c *routedCluster, coll *mongo.Collection) (stored, visible int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		stored = total(c.onShards(t, "test", coll.Name(), bson.D{}))
		n, err := coll.CountDocuments(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if visible = n; visible == stored || time.Now().After(deadline) {
			return stored, visible
		}
		time.Sleep(100 * time.Millisecond)
	}
}
