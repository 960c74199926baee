package router

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// rendezvous holds each shard's request of one command until every
// shard has its own: a router that asks shards one after another never
// gets past the first, which answers an error when its wait runs out.
type rendezvous struct {
	mu      sync.Mutex
	name    string // the command held; "" holds none
	shards  int
	arrived int
	all     chan struct{}
}

// meet reports whether every shard got the command in time.
func (rv *rendezvous) meet(name string) bool {
	rv.mu.Lock()
	if name != rv.name {
		rv.mu.Unlock()
		return true
	}
	rv.arrived++
	if rv.arrived == rv.shards {
		close(rv.all)
	}
	all := rv.all
	rv.mu.Unlock()
	select {
	case <-all:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func (rv *rendezvous) hold(name string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.name, rv.arrived, rv.all = name, 0, make(chan struct{})
}

// startRendezvousCluster is a router over a fake config server and two
// fake shards whose requests of the held command meet at rv.
func startRendezvousCluster(t *testing.T, rv *rendezvous) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{config: &fakeConfig{docs: map[string][]bson.D{}, reads: map[string]int{}}}
	cfgSet := startFakeSet(t, "cfg", fc.config.answer)
	fc.sets = []*fakeSet{cfgSet}
	var addrs []fakeShardAddr
	for _, id := range []string{"shA", "shB"} {
		shard := &fakeShard{versioned: map[string]int{}}
		set := startFakeSet(t, id, func(cmd *server.Command) bson.D {
			if !rv.meet(cmd.Name) {
				return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "the other shard was not asked at the same time"},
					{Key: "code", Value: int32(1)}, {Key: "codeName", Value: "InternalError"}}
			}
			return shard.answer(cmd)
		})
		fc.sets = append(fc.sets, set)
		fc.shards = append(fc.shards, shard)
		addrs = append(addrs, fakeShardAddr{id, set.addr})
	}
	rv.shards = len(addrs)
	fc.config.docs = shardedMetadata(t, addrs, bson.NewObjectID())
	fc.router = startTestRouter(t, cfgSet.addr)
	return fc
}

// fanOutCase is a command the router sends to several shards: the
// command each shard receives, and the client's command.
type fanOutCase struct {
	held string
	db   string
	body bson.D
}

func fanOutCases() map[string]fanOutCase {
	docs := bson.A{}
	ops := bson.A{}
	for i := range 16 { // hashed _ids 0..15 fall on both shards
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
		ops = append(ops, bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: int32(i)}}}})
	}
	noKey := bson.D{{Key: "x", Value: 1}}
	return map[string]fanOutCase{
		"find":          {"find", "db", bson.D{{Key: "find", Value: "sharded"}, {Key: "filter", Value: bson.D{}}}},
		"aggregate":     {"aggregate", "db", bson.D{{Key: "aggregate", Value: "sharded"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}},
		"count":         {"count", "db", bson.D{{Key: "count", Value: "sharded"}}},
		"distinct":      {"distinct", "db", bson.D{{Key: "distinct", Value: "sharded"}, {Key: "key", Value: "x"}}},
		"explain":       {"explain", "db", bson.D{{Key: "explain", Value: bson.D{{Key: "count", Value: "sharded"}}}}},
		"listDatabases": {"listDatabases", "admin", bson.D{{Key: "listDatabases", Value: 1}}},
		"dbStats":       {"dbStats", "db", bson.D{{Key: "dbStats", Value: 1}}},
		"dbstats":       {"dbstats", "db", bson.D{{Key: "dbstats", Value: 1}}},
		"validate":      {"validate", "db", bson.D{{Key: "validate", Value: "sharded"}}},
		"insert":        {"insert", "db", bson.D{{Key: "insert", Value: "sharded"}, {Key: "documents", Value: docs}, {Key: "ordered", Value: false}}},
		"bulkWrite": {"bulkWrite", "admin", bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: ops},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "db.sharded"}}}}, {Key: "ordered", Value: false}}},
		// updateOne, deleteOne and findAndModify without the shard key ask
		// every shard for its first match (phase one).
		"update": {"find", "db", bson.D{{Key: "update", Value: "sharded"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: noKey}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}}}}}},
		"delete": {"find", "db", bson.D{{Key: "delete", Value: "sharded"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: noKey}, {Key: "limit", Value: 1}}}}}},
		"findAndModify": {"find", "db", bson.D{{Key: "findAndModify", Value: "sharded"}, {Key: "query", Value: noKey}, {Key: "remove", Value: true}}},
		"create":        {"create", "db", bson.D{{Key: "create", Value: "sharded"}}},
		"createIndexes": {"createIndexes", "db", bson.D{{Key: "createIndexes", Value: "sharded"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}}},
		"dropIndexes":     {"dropIndexes", "db", bson.D{{Key: "dropIndexes", Value: "sharded"}, {Key: "index", Value: "x_1"}}},
		"collMod":         {"collMod", "db", bson.D{{Key: "collMod", Value: "sharded"}}},
		"drop":            {"_shardsvrDropCollectionParticipant", "db", bson.D{{Key: "drop", Value: "sharded"}}},
		"dropDatabase":    {"_shardsvrDropDatabaseParticipant", "db", bson.D{{Key: "dropDatabase", Value: 1}}},
		"currentOp":       {"aggregate", "admin", bson.D{{Key: "currentOp", Value: 1}}},
		"fsync":           {"fsync", "admin", bson.D{{Key: "fsync", Value: 1}}},
		"fsyncUnlock":     {"fsyncUnlock", "admin", bson.D{{Key: "fsyncUnlock", Value: 1}}},
		"killSessions":    {"killSessions", "admin", bson.D{{Key: "killSessions", Value: bson.A{}}}},
		"killAllSessions": {"killAllSessions", "admin", bson.D{{Key: "killAllSessions", Value: bson.A{}}}},
	}
}

// notFannedOut are the router's commands that never send one request to
// several shards at once, and why.
func notFannedOut() map[string]string {
	return map[string]string{
		"hello": "answered by the router", "isMaster": "answered by the router", "ismaster": "answered by the router",
		"ping": "answered by the router", "buildInfo": "answered by the router", "buildinfo": "answered by the router",
		"getParameter": "answered by the router", "setParameter": "answered by the router", "configureFailPoint": "answered by the router", "serverStatus": "answered by the router", "renameCollection": "the primary shard", "whatsmyuri": "answered by the router",
		"endSessions": "answered by the router", "refreshSessions": "answered by the router",
		"profile": "answered by the router", "getLog": "answered by the router", "getCmdLineOpts": "answered by the router", "hostInfo": "answered by the router", "listCommands": "answered by the router",
		"addShard": "one shard and the config servers", "listShards": "the config servers", "removeShard": "the config servers",
		"enableSharding": "the config servers", "shardCollection": "builds the key's index on each shard in turn before the chunks exist, then the config servers (its closing cache refresh is not a command of the client's)",
		"balancerStatus": "the config servers", "balancerStart": "the config servers", "balancerStop": "the config servers",
		"getMore": "each shard's cursor is read when the merge needs it", "killCursors": "each shard's cursor as the merge closes it",
		"listIndexes": "the primary shard", "listCollections": "the primary shard",
		"createSearchIndexes": "the primary shard", "updateSearchIndex": "the primary shard",
		"dropSearchIndex": "the primary shard", "listSearchIndexes": "the primary shard",
		"findandmodify": "findAndModify's row covers it", "killOp": "the one shard its opid names, or the router's own operation",
		"moveChunk": "the donor shard", "movechunk": "the donor shard", "moveRange": "the donor shard", "split": "the owning shard",
	}
}

func TestFanOutSendsToEveryShardAtOnce(t *testing.T) {
	cases, others := fanOutCases(), notFannedOut()
	for name := range commandTable() {
		_, fans := cases[name]
		_, other := others[name]
		if fans == other {
			t.Errorf("command %q must be in exactly one of fanOutCases and notFannedOut", name)
		}
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			rv := &rendezvous{}
			fc := startRendezvousCluster(t, rv)
			rv.hold(c.held)
			reply := fc.run(c.db, slices.Clone(c.body))
			if wireclient.ReplyCode(reply) != 0 || strings.Contains(fmt.Sprint(reply), "not asked at the same time") {
				t.Fatalf("%s: %v", name, reply)
			}
			rv.mu.Lock()
			defer rv.mu.Unlock()
			if rv.arrived < rv.shards {
				t.Fatalf("%s reached %d of %d shards as %s", name, rv.arrived, rv.shards, c.held)
			}
		})
	}
}

// An ordered insert runs every document before the first it cannot
// place, on whichever shards own them, and stops there.
func TestOrderedInsertRunsUpToItsFirstUnplacedDocument(t *testing.T) {
	fc := startRendezvousCluster(t, &rendezvous{})
	docs := bson.A{}
	for i := range 16 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
	}
	docs = append(docs, bson.D{{Key: "_id", Value: bson.A{1}}}, bson.D{{Key: "_id", Value: int32(99)}})
	reply := fc.run("db", bson.D{{Key: "insert", Value: "sharded"}, {Key: "documents", Value: docs}})
	if n := toInt64(mustField(reply, "n")); n != 16 {
		t.Fatalf("n %d, want 16: %v", n, reply)
	}
	wes := bsonutil.ToA(mustField(reply, "writeErrors"))
	if len(wes) != 1 || toInt64(mustField(bsonutil.ToD(wes[0]), "index")) != 16 {
		t.Fatalf("write errors %v, want one at index 16", wes)
	}
	for _, s := range fc.shards {
		if len(s.inserts) == 0 {
			t.Fatalf("a shard got no insert: the batch stopped before its documents")
		}
	}
}
