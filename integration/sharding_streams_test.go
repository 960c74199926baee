package integration

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// streamEvents is how many changes each stream case makes: enough that
// both shards' changes interleave many times.
const streamEvents = 40

// startRouterProcess starts `mayfly route` on addr and returns its
// process, so that a test can kill it and start another on the same
// address.
func startRouterProcess(t *testing.T, configDB, addr string, extra ...string) *process {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	argv := append([]string{"route", "--configdb", configDB, "--bind_ip", host, "--port", port}, extra...)
	p, err := startLogged(t, buildBinary(t), filepath.Join(t.TempDir(), "route.log"), addr, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// addShardsAndShard adds both shards and shards each namespace by a
// hashed _id.
func addShardsAndShard(t *testing.T, c *routedCluster, cl *mongo.Client, db string, colls ...string) {
	t.Helper()
	admin := cl.Database("admin")
	for _, name := range shardNames() {
		runCmd(t, admin, bson.D{{Key: "addShard", Value: name + "/" + c.shards[name].addrs[0]}})
	}
	runCmd(t, admin, bson.D{{Key: "enableSharding", Value: db}})
	for _, coll := range colls {
		runCmd(t, admin, bson.D{{Key: "shardCollection", Value: db + "." + coll}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	}
}

// TestShardedChangeStreams: change streams through `mayfly route` on a
// config set and two shards, each a real process.
func TestShardedChangeStreams(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	addShardsAndShard(t, c, cl, "cs", "events", "drops", "node")
	t.Run("MergedInOrder", func(t *testing.T) { testStreamMergedInOrder(t, c, cl) })
	t.Run("DatabaseAndCluster", func(t *testing.T) { testStreamScopes(t, cl) })
	t.Run("ResumeAfterRouterRestart", func(t *testing.T) { testStreamResumeAfterRestart(t, c, cl) })
	t.Run("StartsAfterAnotherRoutersWrites", func(t *testing.T) { testStreamStartsAfterOtherRouters(t, c, cl) })
	t.Run("InvalidateOnDrop", func(t *testing.T) { testStreamInvalidate(t, cl) })
	t.Run("NodeDriver", func(t *testing.T) { testNodeThroughRouter(t, c) })
}

// testNodeThroughRouter: the Node.js driver's inserts, finds, aggregate
// and change stream through the router (clients/tests/node_sharded.mjs).
func testNodeThroughRouter(t *testing.T, c *routedCluster) {
	dir := ensureNodeClients(t)
	out, _ := run(t, dir, 2*time.Minute, "node", scriptPath(t, "node_sharded.mjs"), "mongodb://"+c.router+"/")
	if !strings.Contains(out, "node sharded ok") {
		t.Fatalf("node output:\n%s", out)
	}
}

// streamEvent is what the cases read of an event.
type streamEvent struct {
	Op          string         `bson:"operationType"`
	ClusterTime bson.Timestamp `bson:"clusterTime"`
	NS          struct {
		Coll string `bson:"coll"`
	} `bson:"ns"`
	Key struct {
		ID int32 `bson:"_id"`
	} `bson:"documentKey"`
}

// readEvents reads n events, within a generous bound for a loaded machine.
func readEvents(t *testing.T, cs *mongo.ChangeStream, n int) []streamEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make([]streamEvent, 0, n)
	for len(out) < n && cs.Next(ctx) {
		var ev streamEvent
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if len(out) < n {
		t.Fatalf("read %d of %d events: %v", len(out), n, cs.Err())
	}
	return out
}

// insertOneByOne inserts ids [from, to) into coll, each acknowledged
// before the next is sent.
func insertOneByOne(t *testing.T, coll *mongo.Collection, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: int32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkInsertOrder: the events are the inserts of ids [from, from+len)
// in the order they were acknowledged, with cluster times that never go
// back. Each insert was acknowledged before the next was sent, and
// consecutive ids mostly live on different shards, so this order holds
// only if the shards' stamps follow one cluster-wide clock and the
// router holds each event until the other shard has passed it.
func checkInsertOrder(t *testing.T, evs []streamEvent, from int) {
	t.Helper()
	var last bson.Timestamp
	for i, ev := range evs {
		if ev.Op != "insert" || ev.Key.ID != int32(from+i) {
			t.Fatalf("event %d: %s of _id %d, want the insert of %d", i, ev.Op, ev.Key.ID, from+i)
		}
		if ev.ClusterTime.Compare(last) < 0 {
			t.Fatalf("event %d: clusterTime %v after %v", i, ev.ClusterTime, last)
		}
		last = ev.ClusterTime
	}
}

// checkBothShardsHold: the ids were spread over both shards.
func checkBothShardsHold(t *testing.T, c *routedCluster, db, coll string) {
	t.Helper()
	for _, name := range shardNames() {
		n, err := c.shardColl(name, db, coll).CountDocuments(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if n < streamEvents/8 {
			t.Fatalf("shard %s holds %d documents of %s.%s: the case needs both shards", name, n, db, coll)
		}
	}
}

func testStreamMergedInOrder(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := cl.Database("cs").Collection("events")
	cs, err := coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(context.Background())
	start := time.Now()
	insertOneByOne(t, coll, 0, streamEvents)
	inserted := time.Since(start)
	checkInsertOrder(t, readEvents(t, cs, streamEvents), 0)
	t.Logf("%d inserts in %v; their events all read %v after the last", streamEvents, inserted, time.Since(start)-inserted)
	checkBothShardsHold(t, c, "cs", "events")
	if tok := cs.ResumeToken(); tok == nil {
		t.Fatal("no resume token after the events")
	}
}

// testStreamScopes: a database stream and a whole-cluster stream see the
// changes of a sharded and an unsharded collection, merged in order.
func testStreamScopes(t *testing.T, cl *mongo.Client) {
	dbStream, err := cl.Database("cs").Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer dbStream.Close(context.Background())
	clusterStream, err := cl.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer clusterStream.Close(context.Background())
	sharded, plain := cl.Database("cs").Collection("events"), cl.Database("cs").Collection("plain")
	want := make([]string, 0, 20)
	for i := range 10 {
		id := int32(1000 + i)
		for _, coll := range []*mongo.Collection{sharded, plain} {
			if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: id}}); err != nil {
				t.Fatal(err)
			}
			want = append(want, coll.Name())
		}
	}
	for name, cs := range map[string]*mongo.ChangeStream{"database": dbStream, "cluster": clusterStream} {
		evs := readEvents(t, cs, len(want))
		for i, ev := range evs {
			if ev.NS.Coll != want[i] || ev.Key.ID != int32(1000+i/2) {
				t.Fatalf("%s stream, event %d: %s.%d, want %s.%d", name, i, ev.NS.Coll, ev.Key.ID, want[i], 1000+i/2)
			}
		}
	}
}

// testStreamResumeAfterRestart: a client reads half the events through a
// router, the router is killed, more changes are made, and a stream
// resumed with the last token through a new router on the same address
// sees every later change once, in order.
func testStreamResumeAfterRestart(t *testing.T, c *routedCluster, cl *mongo.Client) {
	addr := freePort(t)
	configDB := "cfg/" + c.config.addrs[0]
	router := startRouterProcess(t, configDB, addr)
	viaRouter := connectRouter(t, addr)
	coll := viaRouter.Database("cs").Collection("resume")
	cs, err := coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	insertOneByOne(t, coll, 0, streamEvents/2)
	first := readEvents(t, cs, streamEvents/4)
	checkInsertOrder(t, first, 0)
	token := cs.ResumeToken()
	router.kill9()
	closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = cs.Close(closeCtx) // its router is gone: nothing to wait for
	cancel()
	insertOneByOne(t, cl.Database("cs").Collection("resume"), streamEvents/2, streamEvents)
	startRouterProcess(t, configDB, addr)
	resumed, err := connectRouter(t, addr).Database("cs").Collection("resume").Watch(ctxT(t), mongo.Pipeline{},
		options.ChangeStream().SetResumeAfter(token))
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(context.Background())
	rest := readEvents(t, resumed, streamEvents-streamEvents/4)
	checkInsertOrder(t, rest, streamEvents/4)
	if more := resumed.TryNext(ctxT(t)); more {
		t.Fatalf("an event after the last insert: %v", resumed.Current)
	}
}

// testStreamStartsAfterOtherRouters: a stream opened through one router
// starts after the writes another router acknowledged before it opened,
// though this router never saw them.
func testStreamStartsAfterOtherRouters(t *testing.T, c *routedCluster, cl *mongo.Client) {
	addr := freePort(t)
	startRouterProcess(t, "cfg/"+c.config.addrs[0], addr)
	other := connectRouter(t, addr).Database("cs").Collection("events")
	if _, err := other.CountDocuments(ctxT(t), bson.D{}); err != nil { // its clock: before the writes below
		t.Fatal(err)
	}
	coll := cl.Database("cs").Collection("events")
	for i := range 20 {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: int32(100_000 + i)}}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := other.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(context.Background())
	if _, err := other.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: int32(200_000)}}); err != nil {
		t.Fatal(err)
	}
	first := readEvents(t, cs, 1)
	if first[0].Key.ID != 200_000 {
		t.Fatalf("the stream's first event is %v: it started before another router's acknowledged writes", first[0])
	}
}

// connectRouter connects to a router as applications do.
func connectRouter(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/").
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A client of a killed router would wait out server selection to
		// end its sessions.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = cl.Disconnect(ctx)
	})
	return cl
}

// testStreamInvalidate: dropping a sharded collection through the router
// ends its stream with one drop and one invalidate event.
func testStreamInvalidate(t *testing.T, cl *mongo.Client) {
	coll := cl.Database("cs").Collection("drops")
	insertOneByOne(t, coll, 0, 4)
	cs, err := coll.Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(context.Background())
	if err := coll.Drop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, cs, 2)
	if evs[0].Op != "drop" || evs[1].Op != "invalidate" {
		t.Fatalf("events after the drop: %s, %s; want drop, invalidate", evs[0].Op, evs[1].Op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs.Next(ctx) || cs.ID() != 0 {
		t.Fatalf("the stream goes on after its invalidate (cursor %d, %v)", cs.ID(), cs.Err())
	}
}
