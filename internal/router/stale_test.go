package router

import (
	"maps"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// routedCommands are the commands the router sends to shards with a
// shard version, each with a request that reaches the fake shard.
func routedCommands() map[string]bson.D {
	sharded := func(name string, rest ...bson.E) bson.D {
		return append(bson.D{{Key: name, Value: "sharded"}}, rest...)
	}
	byID := bson.D{{Key: "_id", Value: int32(1)}}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}
	fam := []bson.E{{Key: "query", Value: byID}, {Key: "update", Value: set}}
	return map[string]bson.D{
		"find":      sharded("find", bson.E{Key: "filter", Value: bson.D{}}),
		"aggregate": sharded("aggregate", bson.E{Key: "pipeline", Value: bson.A{}}, bson.E{Key: "cursor", Value: bson.D{}}),
		"count":     sharded("count"),
		"distinct":  sharded("distinct", bson.E{Key: "key", Value: "a"}),
		"insert":    sharded("insert", bson.E{Key: "documents", Value: bson.A{byID}}),
		"update": sharded("update", bson.E{Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: byID}, {Key: "u", Value: set}}}}),
		"delete": sharded("delete", bson.E{Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: byID}, {Key: "limit", Value: int32(1)}}}}),
		"findAndModify": sharded("findAndModify", fam...),
		"findandmodify": sharded("findandmodify", fam...),
		"create":        {{Key: "create", Value: "plain"}},
		"createIndexes": sharded("createIndexes", bson.E{Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: int32(1)}}}, {Key: "name", Value: "a_1"}}}}),
		"dropIndexes":         sharded("dropIndexes", bson.E{Key: "index", Value: "a_1"}),
		"collMod":             sharded("collMod"),
		"drop":                {{Key: "drop", Value: "plain"}},
		"listIndexes":         sharded("listIndexes"),
		"createSearchIndexes": sharded("createSearchIndexes", bson.E{Key: "indexes", Value: bson.A{}}),
		"updateSearchIndex":   sharded("updateSearchIndex", bson.E{Key: "name", Value: "s"}),
		"dropSearchIndex":     sharded("dropSearchIndex", bson.E{Key: "name", Value: "s"}),
		"listSearchIndexes":   sharded("listSearchIndexes"),
		"listCollections":     {{Key: "listCollections", Value: int32(1)}},
		"validate":            sharded("validate"),
		"explain":             {{Key: "explain", Value: sharded("find", bson.E{Key: "filter", Value: bson.D{}})}},
		"bulkWrite": {{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: bson.A{bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: byID}}}},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "db.sharded"}}}}},
	}
}

// commandDB is the database a routed command is sent to: admin for
// bulkWrite, which names its namespaces in full.
func commandDB(body bson.D) string {
	if body[0].Key == "bulkWrite" {
		return "admin"
	}
	return "db"
}

// unversionedCommands are the router's other commands, and why they
// carry no shard version.
func unversionedCommands() map[string]string {
	handshake := "the handshake: answered by the router itself"
	admin := "cluster administration: reads and writes config.* on the config servers"
	cursor := "works on the router's own cursors"
	return map[string]string{
		"hello": handshake, "isMaster": handshake, "ismaster": handshake, "ping": handshake,
		"buildInfo": handshake, "buildinfo": handshake, "getParameter": handshake, "setParameter": handshake, "configureFailPoint": "sets a fail point of the router itself", "serverStatus": "answered by the router from its own process",
		"renameCollection": "an unsharded collection on its primary shard, checked against the config servers read afresh", "whatsmyuri": handshake,
		"endSessions": handshake, "refreshSessions": handshake,
		"fsync": "every member's storage: no collection's version applies", "fsyncUnlock": "every member's storage: no collection's version applies",
		"profile": "the router's own settings", "getLog": "the router's own process", "getCmdLineOpts": "the router's own process", "hostInfo": "the router's own process", "listCommands": "the router's own commands",
		"currentOp": "operations in flight, on every shard: no collection's version applies", "killOp": "one operation, the router's or a shard's: no collection's version applies",
		"killSessions": "sessions, on every shard: no collection's version applies", "killAllSessions": "sessions, on every shard: no collection's version applies",
		"addShard": admin, "listShards": admin, "removeShard": admin, "enableSharding": admin,
		"shardCollection": admin, "balancerStatus": admin, "balancerStart": admin, "balancerStop": admin,
		"moveChunk": admin, "movechunk": admin, "moveRange": admin, "split": admin,
		"getMore": cursor, "killCursors": cursor,
		"listDatabases": "asks every shard about every database: no one collection's version applies",
		"dbStats":       "asks every shard about a database: no one collection's version applies",
		"dbstats":       "asks every shard about a database: no one collection's version applies",
		"dropDatabase":  "forgets the metadata first, then has every shard drop its copy under a hold there (_shardsvrDropDatabaseParticipant): no version to be stale",
	}
}

// TestEveryCommandIsClassified: each command of the table is either sent
// with a shard version (and tested below) or listed with its reason.
func TestEveryCommandIsClassified(t *testing.T) {
	routed, other := routedCommands(), unversionedCommands()
	checkClassified(t, slices.Sorted(maps.Keys(commandTable())), routed, other)
	for name := range routed {
		if _, ok := commandTable()[name]; !ok {
			t.Errorf("routedCommands lists %s, which the router does not answer", name)
		}
	}
	for name := range other {
		if _, ok := commandTable()[name]; !ok {
			t.Errorf("unversionedCommands lists %s, which the router does not answer", name)
		}
	}
}

// TestStaleConfigRefreshesAndRetries: for every routed command, a shard's
// StaleConfig makes the router reload the collection's metadata and send
// the command again, and the client sees only the success.
func TestStaleConfigRefreshesAndRetries(t *testing.T) {
	fc := startFakeCluster(t)
	for _, name := range slices.Sorted(maps.Keys(routedCommands())) {
		body := routedCommands()[name]
		fc.setStale(0)
		if reply := fc.run(commandDB(body), body); !bsonutil.TrueValue(mustField(reply, "ok")) {
			t.Fatalf("%s: %v", name, reply)
		}
		fc.setStale(1)
		_, readsBefore := fc.counts(body[0].Key, shardmeta_collections)
		reply := fc.run(commandDB(body), body)
		versioned, readsAfter := fc.counts(body[0].Key, shardmeta_collections)
		if !bsonutil.TrueValue(mustField(reply, "ok")) || versioned != 2 || readsAfter <= readsBefore {
			t.Errorf("%s after one StaleConfig: reply %v, sent %d times with a version, config.collections read %d→%d",
				name, reply, versioned, readsBefore, readsAfter)
		}
	}
}

// TestStaleConfigGivesUpAfterTenTries: a shard that stays stale gets ten
// tries, as mongos's kMaxNumStaleVersionRetries, then the client sees
// StaleConfig.
func TestStaleConfigGivesUpAfterTenTries(t *testing.T) {
	fc := startFakeCluster(t)
	for _, name := range []string{"find", "insert", "update"} {
		body := routedCommands()[name]
		fc.setStale(1000)
		reply := fc.run(commandDB(body), body)
		versioned, _ := fc.counts(name, shardmeta_collections)
		code := mustField(reply, "code")
		if we := bsonutil.ToA(mustField(reply, "writeErrors")); len(we) == 1 {
			code = mustField(bsonutil.ToD(we[0]), "code")
		}
		if code != int32(13388) || versioned != maxStaleRetries {
			t.Errorf("%s always stale: reply %v after %d tries", name, reply, versioned)
		}
	}
}

const shardmeta_collections = "collections"

// TestLostReplyResendsOnlyWhatIsSafe: when a shard's connection breaks
// before its answer, the router sends the command again only if that
// cannot apply it twice — a read, or a retryable write — and otherwise
// answers HostUnreachable, for every routed command.
func TestLostReplyResendsOnlyWhatIsSafe(t *testing.T) {
	fc := startFakeCluster(t)
	retryable := bson.D{{Key: "insert", Value: "sharded"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: int32(7)}}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}},
		{Key: "txnNumber", Value: int64(1)}}
	rows := routedCommands()
	rows["insert (retryable)"] = retryable
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		body := rows[name]
		fc.setStale(0)
		fc.run(commandDB(body), body) // the metadata is cached: only the shard is asked below
		fc.setFaults(0, 1)
		reply := fc.run(commandDB(body), body)
		sent, _ := fc.counts(body[0].Key, shardmeta_collections)
		resend := wireclient.SafeToResend(body)
		switch {
		case resend && (sent != 2 || !bsonutil.TrueValue(mustField(reply, "ok"))):
			t.Errorf("%s, safe to send again: sent %d times, reply %v", name, sent, reply)
		case !resend && (sent != 1 || mustField(reply, "code") != int32(6)):
			t.Errorf("%s, not safe to send again: sent %d times, reply %v", name, sent, reply)
		}
	}
}

// TestStaleInsertResendsTheRestWithTheirStatementIDs: a shard that stops
// an ordered retryable insert at statement 2 with StaleConfig has written
// 0 and 1; after the refresh the router sends 2, 3 and 4 only, with
// their own statement ids, and the client sees all five inserted.
func TestStaleInsertResendsTheRestWithTheirStatementIDs(t *testing.T) {
	fc := startFakeCluster(t)
	docs := bson.A{}
	for i := range 5 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
	}
	body := bson.D{{Key: "insert", Value: "sharded"}, {Key: "documents", Value: docs},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}},
		{Key: "txnNumber", Value: int64(3)}}
	fc.run("db", bson.D{{Key: "count", Value: "sharded"}}) // metadata cached
	for _, s := range fc.sets {
		s.mu.Lock()
	}
	fc.shard.staleAt, fc.shard.inserts = 2, nil
	for _, s := range fc.sets {
		s.mu.Unlock()
	}
	reply := fc.run(commandDB(body), body)
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	if mustField(reply, "n") != int32(5) || mustField(reply, "writeErrors") != nil || len(fc.shard.inserts) != 2 {
		t.Fatalf("reply %v after %d inserts", reply, len(fc.shard.inserts))
	}
	for i, want := range []string{"[0, 1, 2, 3, 4]", "[2, 3, 4]"} {
		if got := compact(bsonutil.Format(mustField(fc.shard.inserts[i], "stmtIds"))); got != compact(want) {
			t.Errorf("insert %d: stmtIds %s, want %s", i, got, want)
		}
	}
}

// TestSessionFieldsPassThrough: the fields a shard needs from the
// client's command reach it — the session, the read preference and read
// concern — while the client's $clusterTime does not (the router gossips
// its own), for a read by shard key, a whole-collection read and a count.
func TestSessionFieldsPassThrough(t *testing.T) {
	fc := startFakeCluster(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}
	extra := bson.D{{Key: "lsid", Value: lsid}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondaryPreferred"}}},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 1 << 31, I: 1}}}}}
	for _, body := range []bson.D{
		{{Key: "find", Value: "sharded"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(1)}}}},
		{{Key: "find", Value: "sharded"}, {Key: "filter", Value: bson.D{}}},
		{{Key: "count", Value: "sharded"}},
	} {
		fc.run("db", append(append(bson.D(nil), body...), extra...))
		fc.sets[1].mu.Lock()
		got := fc.shard.last[body[0].Key]
		fc.sets[1].mu.Unlock()
		for _, e := range extra[:3] {
			if v, _ := bsonutil.Field(got, e.Key); bsonutil.Compare(v, e.Value) != 0 {
				t.Errorf("%s: the shard got %s = %v, want %v", bsonutil.Format(body), e.Key, v, e.Value)
			}
		}
		if v, ok := bsonutil.Field(got, "$clusterTime"); ok {
			t.Errorf("%s: the client's $clusterTime reached the shard: %v", bsonutil.Format(body), v)
		}
	}
}

// TestReshardedElsewhere: another router drops and shards db.sharded
// again (a new epoch, uuid and chunks on the config servers); this
// router's next find is refused by the shard, and after one refresh it
// is sent again with the new incarnation's version.
func TestReshardedElsewhere(t *testing.T) {
	fc := startFakeCluster(t)
	find := bson.D{{Key: "find", Value: "sharded"}, {Key: "filter", Value: bson.D{}}}
	if reply := fc.run("db", find); !bsonutil.TrueValue(mustField(reply, "ok")) {
		t.Fatal(reply)
	}
	epoch := bson.NewObjectID()
	for _, s := range fc.sets {
		s.mu.Lock()
	}
	fc.config.docs = clusterMetadata(t, fc.sets[1].addr, epoch)
	fc.shard.epoch, fc.shard.versioned = epoch, map[string]int{}
	for _, s := range fc.sets {
		s.mu.Unlock()
	}
	reply := fc.run("db", find)
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	sent := bsonutil.ToD(mustField(fc.shard.last["find"], "shardVersion"))
	if !bsonutil.TrueValue(mustField(reply, "ok")) || fc.shard.versioned["find"] != 2 || mustField(sent, "e") != epoch {
		t.Fatalf("reply %v after %d tries, last version sent %v (want epoch %s)", reply, fc.shard.versioned["find"], sent, epoch.Hex())
	}
}
