package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// testKillShardMidDocumentMove: an update that changes a document's
// shard key is held after the new copy was inserted on its owner and
// before the old one was deleted; the old owner's member is then killed
// with SIGKILL and started again. Its recovery finishes the move: one
// copy, on the new owner, with the new key. The client's retry of the
// same statement (same lsid and txnNumber) answers the first attempt's
// result, n 1 and nModified 1, without writing again, and no move
// record is left.
func testKillShardMidDocumentMove(t *testing.T, c *routedCluster, cl *mongo.Client) {
	shardBy(t, cl, "test.dm", "k")
	coll := cl.Database("test").Collection("dm")
	docs := make([]any, 0, 10)
	for i := int32(1); i <= 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "v", Value: "x"}})
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	from := shardHolding(t, c, "dm", 1)
	moveTo := keyOnOtherShard(t, 1)
	failPoint(t, c, from, failpoint.DocumentMoveHangAfterInsert, true)

	raw := wireclient.New(wireclient.Options{})
	t.Cleanup(func() { _ = raw.Close() })
	update := bson.D{{Key: "update", Value: "dm"},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: int32(1)}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: moveTo}}}}}}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("docmove-session1")}}}},
		{Key: "txnNumber", Value: int64(1)}}
	first := make(chan struct{})
	go func() {
		defer close(first)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, _ = raw.Run(ctx, c.router, "test", update) // its member is killed: no answer to check
	}()
	waitMoveInserted(t, c, from)
	if n := total(c.onShards(t, "test", "dm", bson.D{{Key: "_id", Value: int32(1)}})); n != 2 {
		t.Fatalf("while held after the insert: %d copies on the shards, want 2 (old and new)", n)
	}
	c.shards[from].kill9(0)
	c.shards[from].start(0)
	c.shards[from].waitPrimary(-1, 30*time.Second)
	<-first

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reply, err := raw.Run(ctx, c.router, "test", update)
	if err != nil || wireclient.ReplyError(reply) != nil {
		t.Fatalf("retry of the statement: %v, %v", reply, err)
	}
	if n, mod := toInt64(field(t, reply, "n")), toInt64(field(t, reply, "nModified")); n != 1 || mod != 1 {
		t.Fatalf("retry answered n %d nModified %d, want the first attempt's 1 and 1: %v", n, mod, reply)
	}
	checkOneCopy(t, c, coll, 1, moveTo)
	if holder := shardHolding(t, c, "dm", 1); holder == from {
		t.Fatalf("the document is still on %s after its move", from)
	}
	if n, err := c.shardColl(from, "config", "documentMoves").CountDocuments(ctxT(t), bson.D{}); err != nil || n != 0 {
		t.Fatalf("move records left on %s: %d, %v", from, n, err)
	}
	if got, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || got != 10 {
		t.Fatalf("documents through the router: %d, %v; want 10", got, err)
	}
}

// shardHolding is the shard storing test.<coll>'s document id.
func shardHolding(t *testing.T, c *routedCluster, coll string, id int32) string {
	t.Helper()
	for shard, n := range c.onShards(t, "test", coll, bson.D{{Key: "_id", Value: id}}) {
		if n > 0 {
			return shard
		}
	}
	t.Fatalf("no shard stores test.%s %d", coll, id)
	return ""
}

// waitMoveInserted waits until a shard records a document move whose new
// copy its owner acknowledged.
func waitMoveInserted(t *testing.T, c *routedCluster, shard string) {
	t.Helper()
	moves := c.shardColl(shard, "config", "documentMoves")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := moves.CountDocuments(ctxT(t), bson.D{{Key: "inserted", Value: true}}); err == nil && n == 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("shard %s recorded no inserted document move", shard)
}
