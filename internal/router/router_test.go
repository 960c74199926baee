package router

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// serveRouter puts r behind a real listener and returns its address.
func serveRouter(t *testing.T, r *Router) string {
	t.Helper()
	srv := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, r)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.Addr().String()
}

// TestKeyFileRouterRequiresLogin: a router started with a keyFile, whose
// config servers hold a user, refuses every command of its table and of
// internal/auth that needs a login, on admin and config alike (the config
// database's commands go to the config servers whole, so the check must
// come first there too), with mongod's Unauthorized; the commands auth
// leaves open answer.
func TestKeyFileRouterRequiresLogin(t *testing.T) {
	fc := startFakeCluster(t)
	creds, err := auth.NewCredentials("reader", "secret", []string{"SCRAM-SHA-256"}, false)
	if err != nil {
		t.Fatal(err)
	}
	fc.config.docs["system.users"] = []bson.D{{{Key: "_id", Value: "admin.reader"}, {Key: "user", Value: "reader"},
		{Key: "db", Value: "admin"}, {Key: "credentials", Value: creds.Document()}, {Key: "roles", Value: bson.A{}}}}
	r, err := New(Config{ConfigDB: "cfg/" + fc.sets[0].addr, Version: "8.0.0", RequireAuth: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	r.reloadUsers()
	addr := serveRouter(t, r)
	client := wireclient.New(wireclient.Options{})
	t.Cleanup(func() { _ = client.Close() })
	names := append(slices.Sorted(maps.Keys(commandTable())), auth.CommandNames()...)
	for _, db := range []string{"admin", "config"} {
		for _, name := range names {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			reply, err := client.Run(ctx, addr, db, bson.D{{Key: name, Value: "shards"}})
			cancel()
			if err != nil {
				t.Fatalf("%s on %s: %v", name, db, err)
			}
			refused := wireclient.ReplyCode(reply) == 13 && strings.Contains(bsonutil.Format(reply), "Command "+name+" requires authentication")
			if refused != auth.RequiresAuthentication(name) {
				t.Errorf("%s on %s (needs a login: %v): %v", name, db, auth.RequiresAuthentication(name), reply)
			}
		}
	}
}

// TestHelloAsMongos: the fields drivers read to call a server a router,
// and none that would make it a replica-set member.
func TestHelloAsMongos(t *testing.T) {
	fc := startFakeCluster(t)
	addr := serveRouter(t, fc.router)
	client := wireclient.New(wireclient.Options{})
	t.Cleanup(func() { _ = client.Close() })
	for _, name := range []string{"hello", "isMaster", "ismaster"} {
		reply, err := client.Run(context.Background(), addr, "admin", bson.D{{Key: name, Value: int32(1)}})
		if err != nil {
			t.Fatal(err)
		}
		primaryKey := map[bool]string{true: "isWritablePrimary", false: "ismaster"}[name == "hello"]
		if mustField(reply, primaryKey) != true || mustField(reply, "msg") != "isdbgrid" ||
			mustField(reply, "maxWireVersion") != int32(maxWireVersion) || mustField(reply, "logicalSessionTimeoutMinutes") == nil {
			t.Errorf("%s: %v", name, reply)
		}
		for _, absent := range []string{"setName", "hosts", "primary", "isreplicaset", "secondary", "me"} {
			if _, ok := bsonutil.Field(reply, absent); ok {
				t.Errorf("%s has %s: %v", name, absent, reply)
			}
		}
	}
}

// TestIdleCursorsClose: a router cursor unused for cursorIdleTimeout is
// gone (getMore answers CursorNotFound); a younger one stays.
func TestIdleCursorsClose(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	table := newCursorTable(clk)
	old := &routerCursor{ns: "db.c", remote: &remoteCursor{}}
	table.add(old)
	clk.Advance(cursorIdleTimeout + time.Second)
	young := &routerCursor{ns: "db.c", remote: &remoteCursor{}}
	if idle := table.add(young); len(idle) != 1 || idle[0] != old {
		t.Fatalf("closed %v, want the old cursor", idle)
	}
	if _, err := table.checkOut(old.id, "db.c"); err == nil || !strings.Contains(err.Error(), "CursorNotFound") {
		t.Fatalf("getMore on the idle cursor: %v", err)
	}
	c, err := table.checkOut(young.id, "db.c")
	if err != nil || c != young {
		t.Fatalf("getMore on the young cursor: %v", err)
	}
	if _, err := table.checkOut(young.id, "db.c"); err == nil || !strings.Contains(err.Error(), "CursorInUse") {
		t.Fatalf("a second getMore while one runs: %v", err)
	}
	table.checkIn(c, false)
	if _, err := table.checkOut(young.id, "db.other"); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("getMore naming another collection: %v", err)
	}
}

// TestShardKeyValues: which filters pin a hashed key, and to what.
func TestShardKeyValues(t *testing.T) {
	pattern, err := shardkey.Parse(bson.D{{Key: "k", Value: "hashed"}})
	if err != nil {
		t.Fatal(err)
	}
	uuid, _ := shardmeta.NewUUID()
	chunks, err := shardmeta.HashedInitialChunks(shardmeta.InitialLayout{Pattern: pattern, UUID: uuid, Shards: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := shardmeta.NewRoutingTable(shardmeta.Collection{ID: "db.c", UUID: uuid, Key: pattern.Spec()}, chunks)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		filter bson.D
		simple bool
		want   string // bsonutil.Format of the values, "" for none
	}{
		{bson.D{{Key: "k", Value: int32(5)}}, true, "[5]"},
		{bson.D{{Key: "k", Value: bson.D{{Key: "$eq", Value: "x"}}}}, true, `["x"]`},
		{bson.D{{Key: "k", Value: "x"}}, false, ""},
		{bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{int32(1), int32(2)}}}}}, true, "[1, 2]"},
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "k", Value: int32(3)}}}}}, true, "[3]"},
		{bson.D{{Key: "k", Value: bson.D{{Key: "$gt", Value: int32(3)}}}}, true, ""},
		{bson.D{{Key: "k", Value: bson.A{int32(1)}}}, true, ""},
		{bson.D{{Key: "k", Value: bson.Regex{Pattern: "^a"}}}, true, ""},
		{bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{bson.Regex{Pattern: "a"}}}}}}, true, ""},
		{bson.D{{Key: "other", Value: int32(1)}}, true, ""},
		{bson.D{{Key: "k", Value: bson.D{{Key: "sub", Value: int32(1)}}}}, true, "[{sub: 1}]"},
	}
	for _, row := range rows {
		vals := shardKeyValues(table, row.filter, row.simple)
		got := ""
		if vals != nil {
			got = bsonutil.Format(bson.A(vals))
		}
		if compact(got) != compact(row.want) {
			t.Errorf("%s (simple collation %v): %q, want %q", bsonutil.Format(row.filter), row.simple, got, row.want)
		}
	}
}

// TestSplitAggregate: internal/shardmerge splits a pipeline, except a
// leading $collStats, which every shard answers for itself.
func TestSplitAggregate(t *testing.T) {
	stage := func(name string, v any) bson.D { return bson.D{{Key: name, Value: v}} }
	project := stage("$project", bson.D{{Key: "a", Value: 1}})
	group := stage("$group", bson.D{{Key: "_id", Value: "$a"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}})
	rows := []struct {
		in             bson.A
		shards, router int // stages on each side
	}{
		{bson.A{stage("$collStats", bson.D{}), project}, 1, 1},
		{bson.A{project, group}, 2, 1}, // the $group's partial half runs on the shards
		{bson.A{stage("$sample", bson.D{{Key: "size", Value: 1}}), project}, 0, 2},
	}
	for _, row := range rows {
		split, err := splitAggregate(row.in)
		if err != nil {
			t.Fatal(err)
		}
		if len(split.ShardPipeline) != row.shards || len(split.MergePipeline) < row.router {
			t.Errorf("%s: shards %v, router %v", bsonutil.Format(row.in), split.ShardPipeline, split.MergePipeline)
		}
	}
}

// compact drops the spaces of a formatted value (none of the test's
// strings holds one), so that rows read without bsonutil.Format's.
func compact(s string) string { return strings.ReplaceAll(s, " ", "") }

// TestRacingUpsertsOfMetadata: the loser of two upserts of one config
// document (config.version from the heartbeat and from addShard, two
// routers' balancer settings) gets E11000; the router updates again and
// succeeds, once.
func TestRacingUpsertsOfMetadata(t *testing.T) {
	fc := startFakeCluster(t)
	fc.sets[0].mu.Lock()
	fc.config.dupUpserts, fc.config.updates = 1, 0
	fc.sets[0].mu.Unlock()
	err := fc.router.ensureClusterVersion(&operation{ctx: context.Background(), db: "config"})
	fc.sets[0].mu.Lock()
	defer fc.sets[0].mu.Unlock()
	if err != nil || fc.config.updates != 2 {
		t.Fatalf("ensureClusterVersion: %v after %d updates", err, fc.config.updates)
	}
}

// TestShardCollectionAsksTheCollectionsDatabase: shardCollection runs on
// admin, but what it sends shards (the emptiness count, the creation)
// names the collection's database, with that database's version.
func TestShardCollectionAsksTheCollectionsDatabase(t *testing.T) {
	fc := startFakeCluster(t)
	reply := fc.run("admin", bson.D{{Key: "shardCollection", Value: "db.fresh"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	if mustField(reply, "collectionsharded") != "db.fresh" {
		t.Fatalf("shardCollection: %v", reply)
	}
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	for _, name := range []string{"count", "create"} {
		if db := fc.shard.lastDB[name]; db != "db" {
			t.Errorf("%s went to database %q, want db", name, db)
		}
	}
	if _, ok := bsonutil.Field(fc.shard.last["count"], "databaseVersion"); !ok {
		t.Errorf("the emptiness count carries no databaseVersion: %v", fc.shard.last["count"])
	}
}
