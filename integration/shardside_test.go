package integration

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// roleMember is a one-member replica set started with a cluster role
// flag, as the router's tests and users start config servers and shards.
type roleMember struct {
	addr   string
	client *mongo.Client
}

// startRoleMember starts `mayfly --<role> --replSet set` and initiates
// it with cfgExtra added to the config document.
func startRoleMember(t *testing.T, role, set string, cfgExtra ...bson.E) roleMember {
	t.Helper()
	addr := freePort(t)
	if _, err := startMayfly(t, buildBinary(t), t.TempDir(), addr, "--"+role, "--replSet", set, "--ttl-monitor-sleep-secs", "1"); err != nil {
		t.Fatal(err)
	}
	m := roleMember{addr: addr, client: quickClient(t, addr, 20*time.Second)}
	cfg := append(bson.D{{Key: "_id", Value: set}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: addr}}}}}, cfgExtra...)
	if err := m.admin().RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate %s: %v", set, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !isPrimary(addr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no primary within 20s", set)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m
}

func (m roleMember) admin() *mongo.Database { return m.client.Database("admin") }

// rawReply runs cmd and returns the server's reply document, error
// replies included (as a router reads them).
func rawReply(t *testing.T, db *mongo.Database, cmd bson.D) bson.D {
	t.Helper()
	raw, err := db.RunCommand(ctxT(t), cmd).Raw()
	if err != nil {
		return rawError(t, err)
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// withoutGossip drops the fields every replica set reply carries
// ($clusterTime, operationTime), leaving the command's own.
func withoutGossip(d bson.D) bson.D {
	return slices.DeleteFunc(slices.Clone(d), func(e bson.E) bool {
		return e.Key == "$clusterTime" || e.Key == "operationTime"
	})
}

func sameDoc(t *testing.T, what string, got, want bson.D) {
	t.Helper()
	g, err := bson.MarshalExtJSON(got, false, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := bson.MarshalExtJSON(want, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Fatalf("%s\n got %s\nwant %s", what, g, w)
	}
}

// TestShardsideRolesRefuseAStandalone: --configsvr and --shardsvr without
// --replSet stop the start with mongod's message.
func TestShardsideRolesRefuseAStandalone(t *testing.T) {
	bin := buildBinary(t)
	for _, role := range []string{"configsvr", "shardsvr"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, "--"+role, "--addr", "127.0.0.1:0", "--dbpath", t.TempDir()).CombinedOutput()
		cancel()
		want := "BadValue: Cannot start a " + role + " as a standalone server. Please use the option --replSet to start the node as a replica set."
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("--%s alone: exit %v, output %q; want a failed start saying %q", role, err, out, want)
		}
	}
}

// TestShardsideConfigServerMember: a --configsvr member refuses a config
// without configsvr: true, keeps it once given, and says configsvr: 2 in
// hello; a --shardsvr member refuses configsvr: true and says nothing.
func TestShardsideConfigServerMember(t *testing.T) {
	addr := freePort(t)
	if _, err := startMayfly(t, buildBinary(t), t.TempDir(), addr, "--configsvr", "--replSet", "cfg"); err != nil {
		t.Fatal(err)
	}
	admin := quickClient(t, addr, 20*time.Second).Database("admin")
	members := bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: addr}}}
	plain := bson.D{{Key: "_id", Value: "cfg"}, {Key: "members", Value: members}}
	got := withoutGossip(rawReply(t, admin, bson.D{{Key: "replSetInitiate", Value: plain}}))
	sameDoc(t, "initiate without configsvr: true", got, bson.D{{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: "Nodes started with the --configsvr flag must have configsvr:true in their config"},
		{Key: "code", Value: int32(2)}, {Key: "codeName", Value: "BadValue"}})
	marked := append(plain, bson.E{Key: "configsvr", Value: true})
	if err := admin.RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: marked}}).Err(); err != nil {
		t.Fatalf("initiate with configsvr: true: %v", err)
	}
	conf := runCmd(t, admin, bson.D{{Key: "replSetGetConfig", Value: 1}})
	if v := field(t, field(t, conf, "config").(bson.D), "configsvr"); v != true {
		t.Fatalf("replSetGetConfig configsvr = %v, want true", v)
	}
	hello := runCmd(t, admin, bson.D{{Key: "hello", Value: 1}})
	if v := field(t, hello, "configsvr"); v != int32(2) {
		t.Fatalf("hello configsvr = %v (%T), want int32 2", v, v)
	}
	opts := runCmd(t, admin, bson.D{{Key: "getCmdLineOpts", Value: 1}})
	if v := field(t, field(t, field(t, opts, "parsed").(bson.D), "sharding").(bson.D), "clusterRole"); v != "configsvr" {
		t.Fatalf("getCmdLineOpts parsed.sharding.clusterRole = %v, want configsvr", v)
	}

	shard := startRoleMember(t, "shardsvr", "shA")
	if v := runCmd(t, shard.admin(), bson.D{{Key: "isMaster", Value: 1}}); slices.ContainsFunc(v, func(e bson.E) bool { return e.Key == "configsvr" }) {
		t.Fatalf("a shard's isMaster has configsvr: %v", v)
	}
	cfg := runCmd(t, shard.admin(), bson.D{{Key: "replSetGetConfig", Value: 1}})
	reconf := append(bson.D{}, field(t, cfg, "config").(bson.D)...)
	for i, e := range reconf {
		if e.Key == "version" {
			reconf[i].Value = int32(2)
		}
	}
	reconf = append(reconf, bson.E{Key: "configsvr", Value: true})
	wantCode(t, shard.admin().RunCommand(ctxT(t), bson.D{{Key: "replSetReconfig", Value: reconf}}).Err(), 2,
		"Nodes being used for config servers must be started with the --configsvr flag")
}

// shardedCluster is a config member holding db.c sharded on {k:
// "hashed"} over shA and shB, and shA's member, its shardIdentity
// written as addShard writes it.
type shardedCluster struct {
	config, shard roleMember
	table         *shardmeta.RoutingTable
	dbVersion     shardmeta.DatabaseVersion
}

func startShardedCluster(t *testing.T) *shardedCluster {
	t.Helper()
	c := &shardedCluster{
		config: startRoleMember(t, "configsvr", "cfg", bson.E{Key: "configsvr", Value: true}),
		shard:  startRoleMember(t, "shardsvr", "shA"),
	}
	identity := bson.D{{Key: "_id", Value: "shardIdentity"}, {Key: "shardName", Value: "shA"},
		{Key: "clusterId", Value: bson.NewObjectID()}, {Key: "configsvrConnectionString", Value: "cfg/" + c.config.addr}}
	if _, err := c.shard.client.Database("admin").Collection("system.version").InsertOne(ctxT(t), identity); err != nil {
		t.Fatalf("write shardIdentity: %v", err)
	}
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	c.dbVersion = shardmeta.DatabaseVersion{UUID: uuid, Timestamp: bson.Timestamp{T: 10, I: 1}, LastMod: 1}
	insertConfig(t, c.config, shardmeta.DatabasesCollection, shardmeta.Database{ID: "db", Primary: "shA", Version: c.dbVersion})
	c.table = c.reshard(t, bson.Timestamp{T: 20, I: 1}, "shA", "shB")
	return c
}

// reshard writes db.c's config.collections and config.chunks as a drop
// and a new shardCollection at ts leave them: one chunk per shard.
func (c *shardedCluster) reshard(t *testing.T, ts bson.Timestamp, shards ...string) *shardmeta.RoutingTable {
	t.Helper()
	key := bson.D{{Key: "k", Value: "hashed"}}
	p, err := shardkey.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	coll := shardmeta.Collection{ID: "db.c", Epoch: bson.NewObjectID(), Lastmod: bson.NewDateTimeFromTime(time.Now()), Timestamp: ts, UUID: uuid, Key: key}
	chunks, err := shardmeta.HashedInitialChunks(shardmeta.InitialLayout{Pattern: p, UUID: uuid, Epoch: coll.Epoch, ValidAfter: ts, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	configDB := c.config.client.Database("config")
	if _, err := configDB.Collection(shardmeta.CollectionsCollection).DeleteMany(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := configDB.Collection(shardmeta.ChunksCollection).DeleteMany(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	insertConfig(t, c.config, shardmeta.CollectionsCollection, coll)
	for _, ch := range chunks {
		insertConfig(t, c.config, shardmeta.ChunksCollection, ch)
	}
	table, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func insertConfig(t *testing.T, m roleMember, coll string, doc any) {
	t.Helper()
	raw, err := shardmeta.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.client.Database("config").Collection(coll).InsertOne(ctxT(t), raw); err != nil {
		t.Fatalf("insert config.%s: %v", coll, err)
	}
}

// ownedIDs are the _ids of docs (k = _id) whose chunk in table is shard's.
func ownedIDs(t *testing.T, table *shardmeta.RoutingTable, shard string, n int) []int32 {
	t.Helper()
	var ids []int32
	for i := range int32(n) {
		h, err := shardkey.Hash(i)
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := table.ChunkForHash(h); c.Shard == shard {
			ids = append(ids, i)
		}
	}
	return ids
}

// drainRouted reads the whole collection with a small batch size and
// the shardVersion, so that getMore carries on the first batch's filter.
func drainRouted(t *testing.T, coll *mongo.Collection, v shardmeta.ChunkVersion) []int32 {
	t.Helper()
	cmd := bson.D{{Key: "find", Value: coll.Name()}, {Key: "batchSize", Value: int32(7)}, {Key: "shardVersion", Value: v.Doc()}}
	cur, err := coll.Database().RunCommandCursor(ctxT(t), cmd)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for cur.Next(ctxT(t)) {
		ids = append(ids, cur.Current.Lookup("_id").Int32())
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// keysOwnedAndNot are two values of k, one in a chunk of shard, one not.
func keysOwnedAndNot(t *testing.T, table *shardmeta.RoutingTable, shard string) (owned, orphan int32) {
	t.Helper()
	found := 0
	for k := int32(1000); found != 3 && k < 2000; k++ {
		h, err := shardkey.Hash(k)
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := table.ChunkForHash(h); c.Shard == shard && found&1 == 0 {
			owned, found = k, found|1
		} else if c.Shard != shard && found&2 == 0 {
			orphan, found = k, found|2
		}
	}
	if found != 3 {
		t.Fatal("no key on each side of the split among 1000 values")
	}
	return owned, orphan
}

func routedIDs(t *testing.T, db *mongo.Database, cmd bson.D) []int32 {
	t.Helper()
	reply := runCmd(t, db, cmd)
	var ids []int32
	for _, d := range field(t, field(t, reply, "cursor").(bson.D), "firstBatch").(bson.A) {
		ids = append(ids, field(t, d.(bson.D), "_id").(int32))
	}
	slices.Sort(ids)
	return ids
}

// TestShardsideVersionsAndOrphans drives a shard member as a router
// would: routed commands before addShard are refused; a fresh
// shardVersion reads only owned documents; a stale one gets mongod's
// StaleConfig reply (and, on a write, the write error); a newer one makes
// the shard refresh from the config server and then succeed, with the new
// placement's filter; databaseVersion is checked the same way.
func TestShardsideVersionsAndOrphans(t *testing.T) {
	shard := startRoleMember(t, "shardsvr", "shA")
	db := shard.client.Database("db")
	unsharded := shardmeta.Unsharded.Doc()
	wantCode(t, db.RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}, {Key: "shardVersion", Value: unsharded}}).Err(), 203,
		"Cannot accept sharding commands if sharding state has not been initialized with a shardIdentity document")

	c := startShardedCluster(t)
	db = c.shard.client.Database("db")
	const docs = 200
	insertKeyed(t, db.Collection("c"), docs)
	fresh := c.table.ShardVersion("shA")
	owned := ownedIDs(t, c.table, "shA", docs)
	if len(owned) < docs/4 || len(owned) > 3*docs/4 {
		t.Fatalf("shA owns %d of %d documents: the layout should split them", len(owned), docs)
	}

	t.Run("fresh version reads owned documents only", func(t *testing.T) {
		findCmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(docs)}, {Key: "shardVersion", Value: fresh.Doc()}}
		if got := routedIDs(t, db, findCmd); !slices.Equal(got, owned) {
			t.Fatalf("routed find: %d documents, want the %d shA owns", len(got), len(owned))
		}
		if got := drainRouted(t, db.Collection("c"), fresh); !slices.Equal(got, owned) {
			t.Fatalf("routed find drained by getMore: %d documents, want the %d shA owns", len(got), len(owned))
		}
		if got := routedIDs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(docs)}}); len(got) != docs {
			t.Fatalf("direct find: %d documents, want all %d (orphans included, as mongod)", len(got), docs)
		}
		count := runCmd(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 0}}}}}, {Key: "shardVersion", Value: fresh.Doc()}})
		if n := field(t, count, "n"); n != int32(len(owned)) {
			t.Fatalf("routed count with a predicate: %v, want %d", n, len(owned))
		}
		agg := runCmd(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}},
			{Key: "cursor", Value: bson.D{}}, {Key: "shardVersion", Value: fresh.Doc()}})
		first := field(t, field(t, agg, "cursor").(bson.D), "firstBatch").(bson.A)
		if n := field(t, first[0].(bson.D), "n"); n != int32(len(owned)) {
			t.Fatalf("routed aggregate $count: %v, want %d", n, len(owned))
		}
	})

	t.Run("stale version gets StaleConfig", func(t *testing.T) {
		old := fresh
		old.Epoch, old.Timestamp = bson.NewObjectID(), bson.Timestamp{T: 5, I: 1}
		got := withoutGossip(rawReply(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "shardVersion", Value: old.Doc()}}))
		sameDoc(t, "stale find", got, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "timestamp mismatch detected for db.c"},
			{Key: "code", Value: int32(13388)}, {Key: "codeName", Value: "StaleConfig"},
			{Key: "ns", Value: "db.c"}, {Key: "vReceived", Value: old.Doc()}, {Key: "vWanted", Value: fresh.Doc()}, {Key: "shardId", Value: "shA"}})
		ins := withoutGossip(rawReply(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: -1}}}}, {Key: "shardVersion", Value: old.Doc()}}))
		sameDoc(t, "stale insert", ins, bson.D{{Key: "n", Value: int32(0)}, {Key: "writeErrors", Value: bson.A{bson.D{
			{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(13388)},
			{Key: "ns", Value: "db.c"}, {Key: "vReceived", Value: old.Doc()}, {Key: "vWanted", Value: fresh.Doc()}, {Key: "shardId", Value: "shA"},
			{Key: "errmsg", Value: "timestamp mismatch detected for db.c"}}}}, {Key: "ok", Value: 1.0}})
		if n, err := db.Collection("c").CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: -1}}); err != nil || n != 0 {
			t.Fatalf("the stale insert wrote %d documents (%v)", n, err)
		}
	})

	t.Run("TTL deletes expired orphans too", func(t *testing.T) {
		if _, err := db.Collection("c").Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
			t.Fatal(err)
		}
		before := ttlDeleted(t, db)
		past := bson.NewDateTimeFromTime(time.Now().Add(-time.Hour))
		ownedKey, orphanKey := keysOwnedAndNot(t, c.table, "shA")
		if _, err := db.Collection("c").InsertMany(ctxT(t), []any{
			bson.D{{Key: "_id", Value: int32(-10)}, {Key: "k", Value: ownedKey}, {Key: "at", Value: past}},
			bson.D{{Key: "_id", Value: int32(-11)}, {Key: "k", Value: orphanKey}, {Key: "at", Value: past}},
		}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for ttlDeleted(t, db) < before+2 {
			if time.Now().After(deadline) {
				t.Fatalf("the shard's TTL monitor deleted %d of the 2 expired documents (one owned, one orphan) in 30s", ttlDeleted(t, db)-before)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("newer version refreshes", func(t *testing.T) {
		table := c.reshard(t, bson.Timestamp{T: 30, I: 1}, "shB", "shA")
		newer := table.ShardVersion("shA")
		findCmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(docs)}, {Key: "shardVersion", Value: newer.Doc()}}
		if got, want := routedIDs(t, db, findCmd), ownedIDs(t, table, "shA", docs); !slices.Equal(got, want) {
			t.Fatalf("after the refresh: %d documents, want the %d shA owns now", len(got), len(want))
		}
		// A routed multi-delete leaves the orphans, as mongod's shard
		// skips documents it does not own.
		del := runCmd(t, db, bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: int32(0)}}}},
			{Key: "shardVersion", Value: newer.Doc()}})
		if n := field(t, del, "n"); n != int32(len(ownedIDs(t, table, "shA", docs))) {
			t.Fatalf("routed delete removed %v documents, want the %d owned", n, len(ownedIDs(t, table, "shA", docs)))
		}
		left := routedIDs(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(docs)}})
		if want := ownedIDs(t, table, "shB", docs); !slices.Equal(left, want) {
			t.Fatalf("after the routed delete %d documents are left, want the %d orphans", len(left), len(want))
		}
		got := withoutGossip(rawReply(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "shardVersion", Value: fresh.Doc()}}))
		sameDoc(t, "the old router after the refresh", got, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "timestamp mismatch detected for db.c"},
			{Key: "code", Value: int32(13388)}, {Key: "codeName", Value: "StaleConfig"},
			{Key: "ns", Value: "db.c"}, {Key: "vReceived", Value: fresh.Doc()}, {Key: "vWanted", Value: newer.Doc()}, {Key: "shardId", Value: "shA"}})
	})

	t.Run("databaseVersion", func(t *testing.T) {
		dv := func(v shardmeta.DatabaseVersion) bson.D {
			return bson.D{{Key: "uuid", Value: v.UUID}, {Key: "timestamp", Value: v.Timestamp}, {Key: "lastMod", Value: v.LastMod}}
		}
		plainFind := func(v shardmeta.DatabaseVersion) bson.D {
			return bson.D{{Key: "find", Value: "plain"}, {Key: "shardVersion", Value: unsharded}, {Key: "databaseVersion", Value: dv(v)}}
		}
		runCmd(t, db, plainFind(c.dbVersion))
		behind := c.dbVersion
		behind.LastMod = 0
		got := withoutGossip(rawReply(t, db, plainFind(behind)))
		sameDoc(t, "stale databaseVersion", got, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Version mismatch for the database db"},
			{Key: "code", Value: int32(249)}, {Key: "codeName", Value: "StaleDbVersion"},
			{Key: "db", Value: "db"}, {Key: "vReceived", Value: dv(behind)}, {Key: "vWanted", Value: dv(c.dbVersion)}})
	})
}

// insertKeyed inserts n documents {_id: i, k: i}.
func insertKeyed(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	batch := make([]any, n)
	for i := range batch {
		batch[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i)}}
	}
	if _, err := coll.InsertMany(ctxT(t), batch); err != nil {
		t.Fatal(err)
	}
}
