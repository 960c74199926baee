package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testDropWhileWriting: a sharded collection is dropped through one
// router, by drop and by dropDatabase, while a second router, whose
// routing table still holds the dropped incarnation, inserts into it
// without pause. After each drop every document the shards store is
// visible through the router: no shard accepted a write of the dropped
// incarnation after dropping its copy (which would leave documents on a
// shard that is not the database's primary, invisible to every read and
// back when the name is sharded again). The writer's inserts after the
// drop land in the new, unsharded collection, and after the next
// shardCollection the second router counts what the first inserted.
func testDropWhileWriting(t *testing.T, c *routedCluster, cl *mongo.Client) {
	other := startRouter(t, "cfg/"+c.config.addrs[0])
	ocl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + other + "/").SetRetryWrites(false).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disconnectSoon(ocl) })
	drops := map[string]func(coll *mongo.Collection) error{
		"drop":         func(coll *mongo.Collection) error { return coll.Drop(ctxT(t)) },
		"dropDatabase": func(coll *mongo.Collection) error { return coll.Database().Drop(ctxT(t)) },
	}
	for kind, drop := range drops {
		coll := cl.Database("dw_" + kind).Collection("c")
		stale := ocl.Database("dw_" + kind).Collection("c")
		for round := 0; round < 3; round++ {
			dropWhileWriting(t, c, coll, stale, drop, fmt.Sprintf("%s, round %d", kind, round), round)
		}
	}
}

// dropWhileWriting is one round of testDropWhileWriting.
func dropWhileWriting(t *testing.T, c *routedCluster, coll, stale *mongo.Collection, drop func(*mongo.Collection) error, name string, round int) {
	t.Helper()
	db := coll.Database().Name()
	shardBy(t, coll.Database().Client(), db+".c", "k")
	insertIDs(t, coll, 0, 20)
	if n, err := stale.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 20 {
		t.Fatalf("%s: the second router counts %d (%v), want 20", name, n, err)
	}
	acked := writeUntilStopped(stale, round)
	time.Sleep(100 * time.Millisecond)
	if err := drop(coll); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if acked() == 0 {
		t.Fatalf("%s: the writer had no insert acknowledged", name)
	}
	if stored, visible := waitAllVisible(t, c, coll); visible != stored {
		t.Fatalf("%s: the shards store %d documents, the router shows %d: a shard took writes of the dropped collection",
			name, stored, visible)
	}
	if err := coll.Drop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, shard := range shardNames() {
		if err := c.shardColl(shard, db, "c").Drop(ctxT(t)); err != nil {
			t.Fatal(err)
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
		stored = total(c.onShards(t, coll.Database().Name(), coll.Name(), bson.D{}))
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

// testDropFinishesAnInterruptedDrop: a router that dies after the config
// servers forgot a sharded collection and before the shards dropped
// their copies leaves those copies (here the metadata is deleted on the
// config server directly). A drop sent again, through a router that
// sees the name as unsharded, drops them on every shard.
func testDropFinishesAnInterruptedDrop(t *testing.T, c *routedCluster, cl *mongo.Client) {
	shardBy(t, cl, "test.idrop", "k")
	coll := cl.Database("test").Collection("idrop")
	docs := make([]any, 40)
	for i := range docs {
		docs[i] = bson.D{{Key: "k", Value: int32(i)}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	if held := c.onShards(t, "test", "idrop", bson.D{}); held["shA"] == 0 || held["shB"] == 0 {
		t.Fatalf("the documents are not on both shards: %v", held)
	}
	cfg := c.config.direct(0)
	t.Cleanup(func() { disconnectSoon(cfg) })
	var meta struct {
		UUID bson.Binary `bson:"uuid"`
	}
	configDB := cfg.Database("config")
	if err := configDB.Collection("collections").FindOne(ctxT(t), bson.D{{Key: "_id", Value: "test.idrop"}}).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	if _, err := configDB.Collection("chunks").DeleteMany(ctxT(t), bson.D{{Key: "uuid", Value: meta.UUID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := configDB.Collection("collections").DeleteOne(ctxT(t), bson.D{{Key: "_id", Value: "test.idrop"}}); err != nil {
		t.Fatal(err)
	}
	fresh := quickClient(t, startRouter(t, "cfg/"+c.config.addrs[0]), 20*time.Second)
	if err := fresh.Database("test").Collection("idrop").Drop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if left := total(c.onShards(t, "test", "idrop", bson.D{})); left != 0 {
		t.Fatalf("after the drop was sent again, the shards still hold %d documents", left)
	}
}
