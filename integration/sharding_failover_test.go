package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// ackedIDs collects the _ids whose inserts the router acknowledged.
type ackedIDs struct {
	mu  sync.Mutex
	ids []int32
}

func (a *ackedIDs) add(id int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
}

func (a *ackedIDs) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

// TestShardedReplicaShardFailover: a shard that is a replica set of three.
// While retryable majority inserts go through the router, the shard's
// primary is killed with SIGKILL: the router finds the new primary, and
// every acknowledged insert is read back through it. Then the router is
// killed and started again on its address: the same client reconnects
// and reads every document, and writes again.
func TestShardedReplicaShardFailover(t *testing.T) {
	config := startNamedReplSet(t, "cfg", 1, "--configsvr")
	shard := startNamedReplSet(t, "shR", 3, "--shardsvr")
	configDB := "cfg/" + config.addrs[0]
	routerAddr := freePort(t)
	router := startRouterProcess(t, configDB, routerAddr)
	cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + routerAddr + "/").
		SetWriteConcern(writeconcern.Majority()).SetServerSelectionTimeout(60 * time.Second).SetTimeout(60 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Disconnect(context.Background()) })
	admin := cl.Database("admin")
	runCmd(t, admin, bson.D{{Key: "addShard", Value: "shR/" + strings.Join(shard.addrs, ",")}})
	shardBy(t, cl, "test.fo", "_id")
	coll := cl.Database("test").Collection("fo")

	acked := writeThroughFailover(t, shard, coll)
	checkAcked(t, coll, acked)

	router.kill9()
	startRouterProcess(t, configDB, routerAddr)
	checkAcked(t, coll, acked)
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: int32(1_000_000)}}); err != nil {
		t.Fatalf("insert through the restarted router: %v", err)
	}
}

// writeThroughFailover inserts until 60 are acknowledged, kills the
// shard's primary, and inserts on until 150 are (at most 400 tries, 3
// minutes); the killed member is started again.
func writeThroughFailover(t *testing.T, shard *replSet, coll *mongo.Collection) *ackedIDs {
	t.Helper()
	acked := &ackedIDs{}
	deadline := time.Now().Add(3 * time.Minute)
	killed, failed := -1, 0
	var killedAt time.Time
	for i := int32(0); i < 400 && acked.len() < 150 && time.Now().Before(deadline); i++ {
		if acked.len() == 60 && killed < 0 {
			killed = shard.waitPrimary(-1, 10*time.Second)
			shard.kill9(killed)
			killedAt = time.Now()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Now()}})
		cancel()
		if err != nil {
			failed++
			continue
		}
		if acked.add(i); acked.len() == 61 {
			t.Logf("shard primary %d killed after 60 acknowledged inserts; the next acknowledged %v later", killed, time.Since(killedAt).Round(time.Millisecond))
		}
	}
	t.Logf("%d inserts acknowledged, %d failed", acked.len(), failed)
	if killed < 0 || acked.len() < 150 {
		t.Fatalf("%d inserts acknowledged (primary killed: %v); want 150 across the failover", acked.len(), killed >= 0)
	}
	shard.start(killed)
	return acked
}

// checkAcked reads every acknowledged _id back through the router, each
// once.
func checkAcked(t *testing.T, coll *mongo.Collection, acked *ackedIDs) {
	t.Helper()
	cur, err := coll.Find(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctxT(t), &docs); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]int{}
	for _, d := range docs {
		id, _ := d["_id"].(int32)
		seen[id]++
	}
	for _, id := range acked.ids {
		if seen[id] != 1 {
			t.Fatalf("acknowledged insert %d read %d times through the router (%d documents)", id, seen[id], len(docs))
		}
	}
}
