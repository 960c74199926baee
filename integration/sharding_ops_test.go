package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestShardedOperations: db.currentOp(), $currentOp and db.killOp()
// through mayfly route, on a config set and two shards, each a real
// process, with a find held on its shard by the failCommand fail point;
// and the router's own process commands.
func TestShardedOperations(t *testing.T) {
	c := startRoutedCluster(t, "--setParameter", "enableTestCommands=1")
	cl := c.client()
	addShardsAndShard(t, c, cl, "ops", "docs")
	coll := cl.Database("ops").Collection("docs")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	t.Run("ShardOpKilledByShardOpID", func(t *testing.T) { testKillShardOp(t, c, cl, coll) })
	t.Run("RouterOpKilledByItsOpID", func(t *testing.T) { testKillRouterOp(t, c, cl, coll) })
	t.Run("KillOpArguments", func(t *testing.T) { testKillOpArguments(t, cl) })
	t.Run("LocalOpsMaskSecrets", func(t *testing.T) { testLocalOpsMaskSecrets(t, cl) })
	t.Run("ProcessCommands", func(t *testing.T) { testRouterProcessCommands(t, c, cl) })
	t.Run("FsyncLock", func(t *testing.T) { testRoutedFsyncLock(t, c, cl, coll) })
	t.Run("Validate", func(t *testing.T) { testRoutedValidate(t, cl) })
	t.Run("ProfileAndSlowLog", func(t *testing.T) { testRouterProfile(t, cl, coll) })
}

// holdFind arms failCommand on every shard to hold the next find for
// 20 s, and starts a find of _id 1 through the router, which reaches one
// shard; its error arrives on the channel.
func holdFind(t *testing.T, c *routedCluster, coll *mongo.Collection) chan error {
	t.Helper()
	for _, name := range shardNames() {
		direct := c.shards[name].direct(0)
		t.Cleanup(func() {
			_ = direct.Database("admin").RunCommand(context.Background(), bson.D{
				{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err()
			disconnectSoon(direct)
		})
		failCommand(t, direct, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"find"}},
			{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 20000}})
	}
	done := make(chan error, 1)
	go func() { done <- coll.FindOne(context.Background(), bson.D{{Key: "_id", Value: 1}}).Err() }()
	return done
}

// opsOf runs a $currentOp pipeline through the router, waiting up to
// 10 s for want operations on the collection.
func opsOf(t *testing.T, cl *mongo.Client, spec bson.D, want int) []bson.M {
	t.Helper()
	pipeline := bson.A{bson.D{{Key: "$currentOp", Value: spec}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "command.find", Value: "docs"}}}}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cur, err := cl.Database("admin").Aggregate(ctxT(t), pipeline)
		if err != nil {
			t.Fatal(err)
		}
		var ops []bson.M
		if err := cur.All(ctxT(t), &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) == want || time.Now().After(deadline) {
			if len(ops) != want {
				t.Fatalf("$currentOp %v: %d finds, want %d: %v", spec, len(ops), want, ops)
			}
			return ops
		}
	}
}

func waitInterrupted(t *testing.T, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		wantCode(t, err, 11601, "")
	case <-time.After(10 * time.Second):
		t.Fatal("the held find was not interrupted")
	}
}

func testKillShardOp(t *testing.T, c *routedCluster, cl *mongo.Client, coll *mongo.Collection) {
	done := holdFind(t, c, coll)
	op := opsOf(t, cl, bson.D{}, 1)[0]
	shard, _ := op["shard"].(string)
	opid, _ := op["opid"].(string)
	if c.shards[shard] == nil || !strings.HasPrefix(opid, shard+":") {
		t.Fatalf("a shard's operation through the router: shard %q, opid %v", shard, op["opid"])
	}
	if _, ok := op["client_s"]; !ok || op["client"] != nil {
		t.Fatalf("the shard's client must be under client_s: %v", op)
	}
	var reply struct {
		Inprog []bson.M `bson:"inprog"`
	}
	cmd := bson.D{{Key: "currentOp", Value: 1}, {Key: "command.find", Value: "docs"}}
	if err := cl.Database("admin").RunCommand(ctxT(t), cmd).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Inprog) != 1 || reply.Inprog[0]["opid"] != opid {
		t.Fatalf("currentOp's inprog %v, want the one find %s", reply.Inprog, opid)
	}
	got := runRawCmd(t, cl.Database("admin"), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	if v, _ := got.Lookup("shard").StringValueOK(); v != shard {
		t.Fatalf("killOp's reply %v, want shard %s", got, shard)
	}
	waitInterrupted(t, done)
}

func testKillRouterOp(t *testing.T, c *routedCluster, cl *mongo.Client, coll *mongo.Collection) {
	done := holdFind(t, c, coll)
	opsOf(t, cl, bson.D{}, 1) // held on its shard
	op := opsOf(t, cl, bson.D{{Key: "localOps", Value: true}}, 1)[0]
	opid, isNumber := op["opid"].(int32)
	if !isNumber || op["ns"] != "ops.docs" || op["shard"] != nil {
		t.Fatalf("the router's own operation: %v", op)
	}
	runCmd(t, cl.Database("admin"), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	waitInterrupted(t, done)
	// The router closed its connection to the shard, so the shard's find
	// ends too rather than holding on for its 20 s.
	opsOf(t, cl, bson.D{}, 0)
}

func testKillOpArguments(t *testing.T, cl *mongo.Client) {
	admin := cl.Database("admin")
	cases := []struct {
		op   any
		code int32
	}{
		{"shA", 28625}, {"shA:", 28625}, {":1", 28625}, {"nosuch:1", 70}, {"shA:x", 9}, {true, 50760},
	}
	for _, tc := range cases {
		err := admin.RunCommand(ctxT(t), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: tc.op}}).Err()
		wantCode(t, err, tc.code, "")
	}
	wantCode(t, admin.RunCommand(ctxT(t), bson.D{{Key: "killOp", Value: 1}}).Err(), 50759, "")
	wantCode(t, cl.Database("ops").RunCommand(ctxT(t), bson.D{{Key: "currentOp", Value: 1}}).Err(), 13, "")
}

func testRouterProcessCommands(t *testing.T, c *routedCluster, cl *mongo.Client) {
	admin := cl.Database("admin")
	opts := runRawCmd(t, admin, bson.D{{Key: "getCmdLineOpts", Value: 1}})
	if v, _ := opts.Lookup("argv", "1").StringValueOK(); v != "route" {
		t.Fatalf("getCmdLineOpts argv: %v", opts.Lookup("argv"))
	}
	if v, _ := opts.Lookup("parsed", "sharding", "configDB").StringValueOK(); v != "cfg/"+c.config.addrs[0] {
		t.Fatalf("getCmdLineOpts parsed: %v", opts.Lookup("parsed"))
	}
	host := runRawCmd(t, admin, bson.D{{Key: "hostInfo", Value: 1}})
	if n, _ := host.Lookup("system", "numCores").Int32OK(); n < 1 {
		t.Fatalf("hostInfo: %v", host)
	}
	cmds := runRawCmd(t, admin, bson.D{{Key: "listCommands", Value: 1}})
	if v, _ := cmds.Lookup("commands", "killOp", "adminOnly").BooleanOK(); !v {
		t.Fatalf("listCommands: killOp %v", cmds.Lookup("commands", "killOp"))
	}
	// The kills above were logged, and getLog reads the router's log.
	logs := runRawCmd(t, admin, bson.D{{Key: "getLog", Value: "global"}})
	if !strings.Contains(logs.Lookup("log").String(), "killing operation") {
		t.Fatalf("getLog global has no kill: %v", logs)
	}
}

// runRawCmd runs a command that must succeed and returns its raw reply.
func runRawCmd(t *testing.T, db *mongo.Database, cmd bson.D) bson.Raw {
	t.Helper()
	raw, err := db.RunCommand(ctxT(t), cmd).Raw()
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return raw
}

// testRoutedFsyncLock: fsync through the router flushes the config
// servers and both shards; with lock it holds writes on every shard until
// fsyncUnlock, as for a backup.
func testRoutedFsyncLock(t *testing.T, c *routedCluster, cl *mongo.Client, coll *mongo.Collection) {
	admin := cl.Database("admin")
	members := []string{"cfg/" + c.config.addrs[0]}
	for _, name := range shardNames() {
		members = append(members, name+"/"+c.shards[name].addrs[0])
	}
	reply := runRawCmd(t, admin, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}})
	for _, m := range members {
		if ok, _ := reply.Lookup("all", "raw", m, "ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("fsync lock: no ok from %s in %v", m, reply)
		}
	}
	inserted := make(chan error, 1)
	go func() {
		docs := []any{}
		for i := 100; i < 116; i++ { // hashed _ids 100..115 fall on both shards
			docs = append(docs, bson.D{{Key: "_id", Value: i}})
		}
		_, err := coll.InsertMany(context.Background(), docs)
		inserted <- err
	}()
	select {
	case err := <-inserted:
		t.Fatalf("an insert went through the fsync lock: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	reply = runRawCmd(t, admin, bson.D{{Key: "fsyncUnlock", Value: 1}})
	for _, m := range members {
		if info, _ := reply.Lookup("raw", m, "info").StringValueOK(); info != "fsyncUnlock completed" {
			t.Fatalf("fsyncUnlock: %s in %v", m, reply)
		}
	}
	select {
	case err := <-inserted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the insert still waits after fsyncUnlock")
	}
}

// testRoutedValidate: validate through the router checks each shard's
// part of a sharded collection, and answers for an unsharded one as its
// shard does.
func testRoutedValidate(t *testing.T, cl *mongo.Client) {
	db := cl.Database("ops")
	reply := runRawCmd(t, db, bson.D{{Key: "validate", Value: "docs"}})
	if v, ok := reply.Lookup("valid").BooleanOK(); !v || !ok {
		t.Fatalf("validate of a sharded collection: %v", reply)
	}
	for _, name := range shardNames() {
		if v, _ := reply.Lookup("raw", name, "valid").BooleanOK(); !v {
			t.Fatalf("validate: no valid part from %s in %v", name, reply)
		}
	}
	if _, err := db.Collection("plain").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	reply = runRawCmd(t, db, bson.D{{Key: "validate", Value: "plain"}})
	raw, _ := reply.Lookup("raw").DocumentOK()
	parts, _ := raw.Elements()
	if ns, _ := reply.Lookup("ns").StringValueOK(); ns != "ops.plain" || len(parts) != 1 {
		t.Fatalf("validate of an unsharded collection: %v", reply)
	}
	wantCode(t, db.RunCommand(ctxT(t), bson.D{{Key: "validate", Value: "nosuch"}}).Err(), 26, "")
}

// testLocalOpsMaskSecrets: the router's own operations show a command's
// secret fields masked, as mongod's currentOp does: here the $currentOp
// aggregate itself, sent with a pwd field.
func testLocalOpsMaskSecrets(t *testing.T, cl *mongo.Client) {
	reply := runRawCmd(t, cl.Database("admin"), bson.D{{Key: "aggregate", Value: 1},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{{Key: "localOps", Value: true}}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "command.aggregate", Value: 1}}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "pwd", Value: "hunter2-secret"}})
	text := reply.String()
	if strings.Contains(text, "hunter2-secret") || !strings.Contains(text, `"pwd": "xxx"`) {
		t.Fatalf("the router's currentOp of a command with a pwd: %s", text)
	}
}

// testRouterProfile: the router takes profile levels 0 and -1 only, as
// mongos, and logs commands slower than the slowms it sets.
func testRouterProfile(t *testing.T, cl *mongo.Client, coll *mongo.Collection) {
	db := cl.Database("ops")
	wantCode(t, db.RunCommand(ctxT(t), bson.D{{Key: "profile", Value: 1}}).Err(), 2, "Profiling is not permitted on mongoS")
	runCmd(t, db, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}})
	defer runCmd(t, db, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 100}})
	status := runRawCmd(t, db, bson.D{{Key: "profile", Value: -1}})
	if ms, _ := status.Lookup("slowms").Int32OK(); ms != 0 {
		t.Fatalf("profile -1 after slowms 0: %v", status)
	}
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	var logs struct {
		Log []string `bson:"log"`
	}
	if err := cl.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "getLog", Value: "global"}}).Decode(&logs); err != nil {
		t.Fatal(err)
	}
	for _, line := range logs.Log {
		if strings.Contains(line, `"msg":"Slow query"`) && strings.Contains(line, `"command":"find"`) {
			return
		}
	}
	t.Fatalf("no slow find in the router's log with slowms 0: %q", logs.Log)
}
