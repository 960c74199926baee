package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// routedCluster is a config server set, two shards and a router, each a
// real process on 127.0.0.1, every set of one member for speed.
type routedCluster struct {
	t      *testing.T
	config *replSet
	shards map[string]*replSet // by set name, which is the shard's id
	router string              // host:port
}

// shardNames are the test cluster's shards, in id order.
func shardNames() []string { return []string{"shA", "shB"} }

// startRoutedCluster starts the sets, as a config server set and shards
// (with shardArgs), and the router; the shards are not added yet.
func startRoutedCluster(t *testing.T, shardArgs ...string) *routedCluster {
	t.Helper()
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, 1, append([]string{"--shardsvr"}, shardArgs...)...)
	}
	c.router = startRouter(t, "cfg/"+c.config.addrs[0])
	return c
}

func startRouter(t *testing.T, configDB string) string {
	t.Helper()
	addr := freePort(t)
	startRouterProcess(t, configDB, addr)
	return addr
}

// client connects to the router as applications do (no directConnection).
func (c *routedCluster) client(opts ...*options.ClientOptions) *mongo.Client {
	c.t.Helper()
	o := append([]*options.ClientOptions{options.Client().ApplyURI("mongodb://" + c.router + "/").
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(30 * time.Second)}, opts...)
	cl, err := mongo.Connect(o...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { disconnectSoon(cl) })
	return cl
}

// disconnectSoon disconnects cl without waiting long for a server to end
// its sessions on: a test may have stopped every member it knew, and the
// driver's endSessions would otherwise wait out server selection (30 s a
// client).
func disconnectSoon(cl *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = cl.Disconnect(ctx)
}

// shardColl is a collection read on one shard directly, past the router.
func (c *routedCluster) shardColl(shard, db, coll string) *mongo.Collection {
	cl := c.shards[shard].direct(0)
	c.t.Cleanup(func() { disconnectSoon(cl) })
	return cl.Database(db).Collection(coll)
}

func TestShardedCluster(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	// The balancer would move chunks while these parts count documents
	// per shard; migrations have their own test (migration_test.go).
	runCmd(t, cl.Database("admin"), bson.D{{Key: "balancerStop", Value: 1}})
	t.Run("Topology", func(t *testing.T) { testShardedTopology(t, c) })
	t.Run("Admin", func(t *testing.T) { testShardAdmin(t, c, cl) })
	t.Run("Inserts", func(t *testing.T) { testShardedInserts(t, c, cl) })
	t.Run("MergedQueries", func(t *testing.T) { testMergedQueries(t, cl) })
	t.Run("Writes", func(t *testing.T) { testShardedWrites(t, cl) })
	t.Run("Cursors", func(t *testing.T) { testRouterCursors(t, cl) })
	t.Run("TTL", func(t *testing.T) { testShardedTTL(t, c, cl) })
	t.Run("Mongosh", func(t *testing.T) { testMongoshStatus(t, c) })
	t.Run("StaleRouter", func(t *testing.T) { testStaleRouter(t, c, cl) })
	t.Run("WritesWithoutShardKey", func(t *testing.T) { testWritesWithoutShardKey(t, c, cl) })
	t.Run("ShardKeyUpdates", func(t *testing.T) { testShardKeyUpdates(t, c, cl) })
	t.Run("DropClearsShards", func(t *testing.T) { testDropClearsShards(t, c, cl) })
	t.Run("DropWhileWriting", func(t *testing.T) { testDropWhileWriting(t, c, cl) })
	t.Run("DropFinishesAnInterruptedDrop", func(t *testing.T) { testDropFinishesAnInterruptedDrop(t, c, cl) })
	t.Run("ShardingWithData", func(t *testing.T) { testShardingWithData(t, c, cl) })
	t.Run("RemoveShard", func(t *testing.T) { testRemoveShard(t, cl) })
}

// testShardedTopology: the Go driver sees a router and a Sharded topology.
func testShardedTopology(t *testing.T, c *routedCluster) {
	var mu sync.Mutex
	var kinds []string
	monitor := &event.ServerMonitor{TopologyDescriptionChanged: func(e *event.TopologyDescriptionChangedEvent) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range e.NewDescription.Servers {
			kinds = append(kinds, e.NewDescription.Kind+"/"+s.Kind)
		}
	}}
	cl := c.client(options.Client().SetServerMonitor(monitor))
	if err := cl.Ping(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(kinds, "Sharded/Mongos") {
		t.Fatalf("topology and server kinds seen: %v, want Sharded/Mongos", kinds)
	}
	var hello bson.M
	if err := cl.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"setName", "hosts", "primary", "isreplicaset", "secondary", "me"} {
		if _, ok := hello[absent]; ok {
			t.Errorf("a router's hello has %s: %v", absent, hello)
		}
	}
	if hello["msg"] != "isdbgrid" || hello["maxWireVersion"] != int32(25) {
		t.Errorf("hello = %v", hello)
	}
}

func testShardAdmin(t *testing.T, c *routedCluster, cl *mongo.Client) {
	admin := cl.Database("admin")
	for _, name := range shardNames() {
		url := name + "/" + c.shards[name].addrs[0]
		for range 2 { // adding the same set again is a success
			if got := field(t, runCmd(t, admin, bson.D{{Key: "addShard", Value: url}}), "shardAdded"); got != name {
				t.Fatalf("addShard %s: shardAdded %v", url, got)
			}
		}
	}
	checkShardIdentities(t, c, cl)
	shards := field(t, runCmd(t, admin, bson.D{{Key: "listShards", Value: 1}}), "shards").(bson.A)
	if len(shards) != 2 {
		t.Fatalf("listShards: %v", shards)
	}
	for i, name := range shardNames() {
		d := shards[i].(bson.D)
		if field(t, d, "_id") != name || field(t, d, "host") != name+"/"+c.shards[name].addrs[0] || field(t, d, "state") != int32(1) {
			t.Errorf("listShards[%d] = %v", i, d)
		}
	}
	runCmd(t, admin, bson.D{{Key: "enableSharding", Value: "test"}})
	for _, coll := range []string{"test.c", "test.ttl", "test.w", "test.cur"} {
		reply := runCmd(t, admin, bson.D{{Key: "shardCollection", Value: coll}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
		if field(t, reply, "collectionsharded") != coll {
			t.Fatalf("shardCollection %s: %v", coll, reply)
		}
	}
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "shardCollection", Value: "test.ranged"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}), 72, "hashed")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "shardCollection", Value: "test.u"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}, {Key: "unique", Value: true}}), 72, "cannot be declared unique")
	checkInitialChunks(t, cl)
}

// checkShardIdentities: addShard told each shard its name, the cluster's
// id and where the config servers are, in admin.system.version.
func checkShardIdentities(t *testing.T, c *routedCluster, cl *mongo.Client) {
	var version struct {
		ClusterID bson.ObjectID `bson:"clusterId"`
	}
	if err := cl.Database("config").Collection("version").FindOne(ctxT(t), bson.D{}).Decode(&version); err != nil {
		t.Fatal(err)
	}
	for _, name := range shardNames() {
		var id struct {
			ShardName string        `bson:"shardName"`
			ClusterID bson.ObjectID `bson:"clusterId"`
			ConfigDB  string        `bson:"configsvrConnectionString"`
		}
		err := c.shardColl(name, "admin", "system.version").FindOne(ctxT(t), bson.D{{Key: "_id", Value: "shardIdentity"}}).Decode(&id)
		if err != nil || id.ShardName != name || id.ClusterID != version.ClusterID || id.ConfigDB != "cfg/"+c.config.addrs[0] {
			t.Errorf("shard %s's identity: %+v, %v (cluster %s)", name, id, err, version.ClusterID.Hex())
		}
	}
}

// checkInitialChunks: config.chunks holds 8.0's layout, one chunk per
// shard split at hash 0, read through the router.
func checkInitialChunks(t *testing.T, cl *mongo.Client) {
	var coll struct {
		UUID bson.Binary `bson:"uuid"`
	}
	if err := cl.Database("config").Collection("collections").FindOne(ctxT(t), bson.D{{Key: "_id", Value: "test.c"}}).Decode(&coll); err != nil {
		t.Fatal(err)
	}
	cur, err := cl.Database("config").Collection("chunks").Find(ctxT(t), bson.D{{Key: "uuid", Value: coll.UUID}},
		options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []struct {
		Min   bson.D `bson:"min"`
		Shard string `bson:"shard"`
	}
	if err := cur.All(ctxT(t), &chunks); err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 2 || chunks[0].Shard != "shA" || chunks[1].Shard != "shB" || chunks[1].Min[0].Value != int64(0) {
		t.Fatalf("chunks of test.c: %+v", chunks)
	}
}

func cmdErrOf(db *mongo.Database, cmd bson.D) error {
	return db.RunCommand(context.Background(), cmd).Err()
}

// shardedDoc is document i of the test data: a unique n in another
// order than _id, and groups v and g with repeats.
func shardedDoc(i int) bson.D {
	return bson.D{{Key: "_id", Value: int32(i)}, {Key: "n", Value: int32(i * 7919 % 2000)},
		{Key: "v", Value: int32(i % 7)}, {Key: "g", Value: string(rune('a' + i%5))}}
}

const shardedDocs = 2000

func testShardedInserts(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := cl.Database("test").Collection("c")
	first, second := make([]any, 0, shardedDocs/2), make([]any, 0, shardedDocs/2)
	for i := range shardedDocs {
		if i < shardedDocs/2 {
			first = append(first, shardedDoc(i))
		} else {
			second = append(second, shardedDoc(i))
		}
	}
	if _, err := coll.InsertMany(ctxT(t), first, options.InsertMany().SetOrdered(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctxT(t), second); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, name := range shardNames() {
		n, err := c.shardColl(name, "test", "c").CountDocuments(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if n < shardedDocs/4 {
			t.Errorf("shard %s holds %d of %d documents", name, n, shardedDocs)
		}
		total += n
	}
	if total != shardedDocs {
		t.Fatalf("the shards hold %d documents, want %d", total, shardedDocs)
	}
	var ids []int32
	cur, err := coll.Find(ctxT(t), bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	for cur.Next(ctxT(t)) {
		ids = append(ids, cur.Current.Lookup("_id").Int32())
	}
	slices.Sort(ids)
	if len(ids) != shardedDocs || ids[0] != 0 || ids[len(ids)-1] != shardedDocs-1 || len(slices.Compact(ids)) != shardedDocs {
		t.Fatalf("read back %d documents through the router", len(ids))
	}
}

// mergedQuery is one query run through the router and on one server.
type mergedQuery struct {
	name   string
	filter bson.D
	opts   *options.FindOptionsBuilder
}

func testMergedQueries(t *testing.T, cl *mongo.Client) {
	single := startServer(t, app.Config{})
	ref := connect(t, single).Database("test").Collection("c")
	docs := make([]any, shardedDocs)
	for i := range docs {
		docs[i] = shardedDoc(i)
	}
	if _, err := ref.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	routed := cl.Database("test").Collection("c")
	by := func(keys ...string) bson.D {
		d := bson.D{}
		for _, k := range keys {
			dir := 1
			if k, ok := strings.CutPrefix(k, "-"); ok {
				d = append(d, bson.E{Key: k, Value: -1})
				continue
			}
			d = append(d, bson.E{Key: k, Value: dir})
		}
		return d
	}
	queries := []mergedQuery{
		{"sort _id limit", nil, options.Find().SetSort(by("_id")).SetLimit(10)},
		{"sort -_id skip limit", nil, options.Find().SetSort(by("-_id")).SetSkip(5).SetLimit(7)},
		{"range sort two keys skip limit", bson.D{{Key: "v", Value: bson.D{{Key: "$gte", Value: 3}}}}, options.Find().SetSort(by("v", "_id")).SetSkip(100).SetLimit(50)},
		{"projection after sort", nil, options.Find().SetSort(by("-v", "_id")).SetProjection(bson.D{{Key: "v", Value: 1}}).SetLimit(30)},
		{"equality sort", bson.D{{Key: "g", Value: "c"}}, options.Find().SetSort(by("n"))},
		{"shard key equality", bson.D{{Key: "_id", Value: 42}}, options.Find()},
		{"shard key $in", bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2, 3, 500}}}}}, options.Find().SetSort(by("_id"))},
		{"skip without limit", nil, options.Find().SetSort(by("n")).SetSkip(1990)},
		{"exclusion projection", bson.D{{Key: "v", Value: 2}}, options.Find().SetSort(by("n")).SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "g", Value: 0}})},
		{"sort by group then desc", bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 100}}}}, options.Find().SetSort(by("g", "-n")).SetSkip(3).SetLimit(20)},
		{"small batches", nil, options.Find().SetSort(by("n")).SetBatchSize(7).SetLimit(40)},
	}
	for _, q := range queries {
		want := findQuery(t, ref, q)
		got := findQuery(t, routed, q)
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: through the router %d documents, on one server %d\nrouter: %v\nserver: %v", q.name, len(got), len(want), head(got), head(want))
		}
	}
	compareAggregates(t, ref, routed)
	compareCounts(t, ref, routed)
	checkExplains(t, routed.Database())
}

// checkExplains: explain through the router names its stage over each
// shard's plan, and an aggregate's split.
func checkExplains(t *testing.T, db *mongo.Database) {
	find := func(filter, sort bson.D) bson.D {
		return bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "sort", Value: sort}}},
			{Key: "verbosity", Value: "queryPlanner"}}
	}
	rows := []struct {
		cmd    bson.D
		stage  string
		shards int
	}{
		{find(bson.D{{Key: "_id", Value: 5}}, bson.D{}), "SINGLE_SHARD", 1},
		{find(bson.D{}, bson.D{{Key: "n", Value: 1}}), "SHARD_MERGE_SORT", 2},
		{find(bson.D{{Key: "v", Value: 1}}, bson.D{}), "SHARD_MERGE", 2},
	}
	for _, row := range rows {
		plan := field(t, field(t, runCmd(t, db, row.cmd), "queryPlanner").(bson.D), "winningPlan").(bson.D)
		if field(t, plan, "stage") != row.stage || len(field(t, plan, "shards").(bson.A)) != row.shards {
			t.Errorf("explain %v: %v", row.cmd, plan)
		}
	}
	agg := runCmd(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}},
		{Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "queryPlanner"}})
	if field(t, agg, "mergeType") != "mongos" || len(field(t, agg, "shards").(bson.D)) != 2 {
		t.Errorf("explain aggregate: %v", agg)
	}
}

func findQuery(t *testing.T, coll *mongo.Collection, q mergedQuery) []bson.D {
	t.Helper()
	filter := q.filter
	if filter == nil {
		filter = bson.D{}
	}
	cur, err := coll.Find(ctxT(t), filter, q.opts)
	if err != nil {
		t.Fatalf("%s: %v", q.name, err)
	}
	var out []bson.D
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatalf("%s: %v", q.name, err)
	}
	return out
}

func head(docs []bson.D) []bson.D { return docs[:min(len(docs), 3)] }

func compareAggregates(t *testing.T, ref, routed *mongo.Collection) {
	pipelines := map[string]bson.A{
		"group sort": {bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}},
		"sort skip limit": {bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: 1}}}}, bson.D{{Key: "$skip", Value: 10}}, bson.D{{Key: "$limit", Value: 5}}},
		"match count":     {bson.D{{Key: "$match", Value: bson.D{{Key: "v", Value: 1}}}}, bson.D{{Key: "$count", Value: "k"}}},
		"group partial accumulators": {bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$v"},
			{Key: "avg", Value: bson.D{{Key: "$avg", Value: "$n"}}}, {Key: "lo", Value: bson.D{{Key: "$min", Value: "$n"}}},
			{Key: "hi", Value: bson.D{{Key: "$max", Value: "$n"}}}, {Key: "c", Value: bson.D{{Key: "$count", Value: bson.D{}}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}},
		"project sort limit": {bson.D{{Key: "$project", Value: bson.D{{Key: "twice", Value: bson.D{{Key: "$multiply", Value: bson.A{"$n", 2}}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "twice", Value: -1}}}}, bson.D{{Key: "$limit", Value: 4}}},
	}
	for name, p := range pipelines {
		want, got := aggregateEach(t, ref, p), aggregateEach(t, routed, p)
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("aggregate %s: router %v, server %v", name, head(got), head(want))
		}
	}
}

func aggregateEach(t *testing.T, coll *mongo.Collection, p bson.A) []bson.D {
	t.Helper()
	cur, err := coll.Aggregate(ctxT(t), p)
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareCounts: count (with skip and limit), countDocuments and
// distinct agree with one server's.
func compareCounts(t *testing.T, ref, routed *mongo.Collection) {
	counts := []bson.D{
		{{Key: "count", Value: "c"}},
		{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "v", Value: 3}}}},
		{{Key: "count", Value: "c"}, {Key: "skip", Value: 1990}},
		{{Key: "count", Value: "c"}, {Key: "skip", Value: 10}, {Key: "limit", Value: 25}},
	}
	for _, cmd := range counts {
		want := runCmd(t, ref.Database(), cmd)
		got := runCmd(t, routed.Database(), cmd)
		if field(t, got, "n") != field(t, want, "n") {
			t.Errorf("%v: router %v, server %v", cmd, field(t, got, "n"), field(t, want, "n"))
		}
	}
	for _, key := range []string{"g", "v"} {
		filter := bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 50}}}}
		var want, got []any
		if err := ref.Distinct(ctxT(t), key, filter).Decode(&want); err != nil {
			t.Fatal(err)
		}
		if err := routed.Distinct(ctxT(t), key, filter).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sortedAny(got)) != fmt.Sprint(sortedAny(want)) {
			t.Errorf("distinct %s: router %v, server %v", key, got, want)
		}
	}
	n, err := routed.CountDocuments(ctxT(t), bson.D{{Key: "g", Value: "a"}})
	if err != nil || n != shardedDocs/5 {
		t.Errorf("countDocuments through the router: %d, %v", n, err)
	}
}

func sortedAny(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = fmt.Sprint(v)
	}
	slices.Sort(out)
	return out
}

// testShardedWrites: writes are routed by the shard key; those that
// cannot be are refused as mongos refused them before 7.1.
func testShardedWrites(t *testing.T, cl *mongo.Client) {
	coll := cl.Database("test").Collection("w")
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i % 2)}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	checkDuplicateInserts(t, coll, docs)
	one, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	if err != nil || one.MatchedCount != 1 || one.ModifiedCount != 1 {
		t.Fatalf("updateOne by shard key: %+v, %v", one, err)
	}
	many, err := coll.UpdateMany(ctxT(t), bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "x", Value: 10}}}})
	if err != nil || many.MatchedCount != 10 || many.ModifiedCount != 10 {
		t.Fatalf("updateMany broadcast: %+v, %v", many, err)
	}
	_, err = coll.UpdateOne(ctxT(t), bson.D{{Key: "k", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
	wantCode(t, err, 61, "Failed to target upsert by query")
	up, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "_id", Value: 100}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: 9}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || up.UpsertedID != int32(100) {
		t.Fatalf("upsert by shard key: %+v, %v", up, err)
	}
	var fam bson.M
	if err := coll.FindOneAndUpdate(ctxT(t), bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}).Decode(&fam); err != nil || fam["_id"] != int32(4) {
		t.Fatalf("findAndModify by shard key: %v, %v", fam, err)
	}
	wantCode(t, coll.FindOneAndUpdate(ctxT(t), bson.D{{Key: "k", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}, options.FindOneAndUpdate().SetUpsert(true)).Err(), 61, "must contain the shard key")
	del, err := coll.DeleteMany(ctxT(t), bson.D{{Key: "k", Value: 1}})
	if err != nil || del.DeletedCount != 10 {
		t.Fatalf("deleteMany broadcast: %+v, %v", del, err)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 11 {
		t.Fatalf("after the writes: %d documents, %v", n, err)
	}
	_, err = coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
	wantCode(t, err, 67, "cannot create unique index over")
}

// checkDuplicateInserts inserts docs again: unordered, every one fails,
// reported in the client's order although two shards answered; ordered,
// the batch stops at the first.
func checkDuplicateInserts(t *testing.T, coll *mongo.Collection, docs []any) {
	_, err := coll.InsertMany(ctxT(t), docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != len(docs) {
		t.Fatalf("unordered duplicate inserts: %v", err)
	}
	for i, we := range bwe.WriteErrors {
		if we.Index != i || we.Code != 11000 {
			t.Fatalf("write error %d: index %d code %d", i, we.Index, we.Code)
		}
	}
	_, err = coll.InsertMany(ctxT(t), docs)
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 0 {
		t.Fatalf("ordered duplicate inserts: %v", err)
	}
}

// testRouterCursors: a merged cursor is the router's: getMore reads on,
// killCursors closes it and the shards' cursors behind it.
func testRouterCursors(t *testing.T, cl *mongo.Client) {
	db := cl.Database("test")
	reply := runCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "batchSize", Value: 10}})
	cur := field(t, reply, "cursor").(bson.D)
	id := field(t, cur, "id").(int64)
	if id == 0 || len(field(t, cur, "firstBatch").(bson.A)) != 10 {
		t.Fatalf("find: %v", reply)
	}
	more := field(t, runCmd(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 10}}), "cursor").(bson.D)
	batch := field(t, more, "nextBatch").(bson.A)
	if field(t, more, "id") != id || len(batch) != 10 || field(t, batch[0].(bson.D), "n") != int32(10) {
		t.Fatalf("getMore: %v", more)
	}
	killed := runCmd(t, db, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	if got := field(t, killed, "cursorsKilled").(bson.A); len(got) != 1 || got[0] != id {
		t.Fatalf("killCursors: %v", killed)
	}
	wantCode(t, cmdErrOf(db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}), 43, "not found")
	// An unsharded collection's cursor passes through its primary shard.
	if _, err := db.Collection("plain").InsertMany(ctxT(t), []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}, bson.D{{Key: "a", Value: 3}}}); err != nil {
		t.Fatal(err)
	}
	c, err := db.Collection("plain").Find(ctxT(t), bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	var plain []bson.D
	if err := c.All(ctxT(t), &plain); err != nil || len(plain) != 3 {
		t.Fatalf("unsharded cursor: %d documents, %v", len(plain), err)
	}
}

// testShardedTTL: a TTL index made through the router is on every shard,
// each shard's monitor deletes its own expired documents, and the router
// never returns an expired one.
func testShardedTTL(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := cl.Database("test").Collection("ttl")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range shardNames() {
		specs, err := c.shardColl(name, "test", "ttl").Indexes().ListSpecifications(ctxT(t))
		if err != nil || !slices.ContainsFunc(specs, func(s mongo.IndexSpecification) bool { return s.ExpireAfterSeconds != nil }) {
			t.Fatalf("shard %s has no TTL index: %v, %v", name, specs, err)
		}
	}
	now := time.Now()
	docs := make([]any, 200)
	for i := range docs {
		at := now.Add(time.Hour)
		if i%2 == 0 {
			at = now.Add(-time.Hour)
		}
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "expireAt", Value: at}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 100 {
		t.Fatalf("through the router %d live documents, want 100 (%v)", n, err)
	}
	waitShardDeletions(t, c, 100)
	watchExpiry(t, coll)
}

// waitShardDeletions waits until the shards' TTL monitors have deleted
// want documents between them, each some.
func waitShardDeletions(t *testing.T, c *routedCluster, want int64) {
	deadline := time.Now().Add(30 * time.Second)
	var per map[string]int64
	for time.Now().Before(deadline) {
		per = map[string]int64{}
		var total int64
		for _, name := range shardNames() {
			status := runCmd(t, c.shardColl(name, "admin", "x").Database(), bson.D{{Key: "serverStatus", Value: 1}})
			ttl := field(t, field(t, status, "metrics").(bson.D), "ttl").(bson.D)
			per[name] = field(t, ttl, "deletedDocuments").(int64)
			total += per[name]
		}
		if total >= want && per["shA"] > 0 && per["shB"] > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("TTL deletions per shard: %v, want %d in all", per, want)
}

// watchExpiry reads documents expiring in 2.5 s (time for the insert on
// a loaded machine) through the router until 1.5 s after: none may come
// back once its expireAt has passed.
func watchExpiry(t *testing.T, coll *mongo.Collection) {
	at := time.Now().Add(2500 * time.Millisecond)
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(1000 + i)}, {Key: "soon", Value: true}, {Key: "expireAt", Value: at}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	var sawLive bool
	end := at.Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		sent := time.Now().Truncate(time.Millisecond)
		cur, err := coll.Find(ctxT(t), bson.D{{Key: "soon", Value: true}})
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ExpireAt time.Time `bson:"expireAt"`
		}
		if err := cur.All(ctxT(t), &got); err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			if !d.ExpireAt.After(sent) {
				t.Fatalf("read at %v returned a document that expired at %v", sent, d.ExpireAt)
			}
		}
		sawLive = sawLive || len(got) > 0
		time.Sleep(50 * time.Millisecond)
	}
	if !sawLive {
		t.Fatal("no read saw the documents before they expired: the test proved nothing")
	}
}

// testMongoshStatus: mongosh connects as to mongos and sh.status() names
// the shards and the chunks.
func testMongoshStatus(t *testing.T, c *routedCluster) {
	out, _ := mongosh(t, "mongodb://"+c.router+"/test", "--eval",
		`print(db.hello().msg); print(sh.getBalancerState()); print(sh.status()); db.c.getShardDistribution()`)
	dir := ensureNodeClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Interactive, as a user connects: the prompt names the router.
	shell := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "mongosh"), "mongodb://"+c.router+"/test", "--norc")
	shell.Env = append(os.Environ(), "DO_NOT_TRACK=1", "MONGOSH_NO_TELEMETRY=1")
	shell.Stdin = strings.NewReader("db.hello().msg\nexit\n")
	prompt, err := shell.CombinedOutput()
	if err != nil || !strings.Contains(string(prompt), "[direct: mongos] test>") {
		t.Errorf("mongosh's prompt (%v):\n%s", err, prompt)
	}
	for _, want := range []string{"isdbgrid", "true", "shardingVersion", "clusterId", "_id: 'shA'", "_id: 'shB'",
		"'test.c'", "shardKey: { _id: 'hashed' }", "{ shard: 'shA', nChunks: 1 }", "{ shard: 'shB', nChunks: 1 }",
		"Shard shA at shA/", "Shard shB at shB/", "docs: 2000"} {
		if !strings.Contains(out, want) {
			t.Errorf("mongosh output lacks %q:\n%s", want, out)
		}
	}
}

// testStaleRouter: a second router caches test.stale's routing table;
// the first drops the collection and shards it again (a new epoch). The
// shards refuse the second router's old version with StaleConfig, and
// it refreshes and serves the new incarnation correctly.
func testStaleRouter(t *testing.T, c *routedCluster, cl *mongo.Client) {
	admin := cl.Database("admin")
	shard := bson.D{{Key: "shardCollection", Value: "test.stale"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}
	runCmd(t, admin, shard)
	other := c.client(options.Client().ApplyURI("mongodb://" + startRouter(t, "cfg/"+c.config.addrs[0]) + "/"))
	stale := other.Database("test").Collection("stale")
	insertIDs(t, stale, 0, 100) // the second router now holds the first incarnation's table
	if err := cl.Database("test").Collection("stale").Drop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	runCmd(t, admin, shard)
	insertIDs(t, stale, 100, 160)
	for _, coll := range []*mongo.Collection{stale, cl.Database("test").Collection("stale")} {
		n, err := coll.CountDocuments(ctxT(t), bson.D{})
		if err != nil || n != 60 {
			t.Fatalf("after the re-shard: %d documents, %v; want the 60 written since", n, err)
		}
	}
	var total int64
	for _, name := range shardNames() {
		n, err := c.shardColl(name, "test", "stale").CountDocuments(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 60 {
		t.Fatalf("the shards hold %d documents of test.stale, want 60", total)
	}
}

// testRemoveShard: removing a shard that owns chunks starts draining and
// stays draining (no migrations yet); an unknown shard is refused.
func testRemoveShard(t *testing.T, cl *mongo.Client) {
	admin := cl.Database("admin")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "removeShard", Value: "nosuch"}}), 70, "not found")
	started := runCmd(t, admin, bson.D{{Key: "removeShard", Value: "shB"}})
	if field(t, started, "state") != "started" {
		t.Fatalf("removeShard: %v", started)
	}
	ongoing := runCmd(t, admin, bson.D{{Key: "removeShard", Value: "shB"}})
	remaining := field(t, ongoing, "remaining").(bson.D)
	owned, err := cl.Database("config").Collection("chunks").CountDocuments(ctxT(t), bson.D{{Key: "shard", Value: "shB"}})
	if err != nil {
		t.Fatal(err)
	}
	if field(t, ongoing, "state") != "ongoing" || field(t, remaining, "chunks") != owned || owned == 0 {
		t.Fatalf("removeShard again: %v", ongoing)
	}
}
