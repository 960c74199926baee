package router

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// fakeSet is a one-member replica set on 127.0.0.1 whose answers a test
// writes: a config server holding documents, or a shard.
type fakeSet struct {
	name string
	addr string
	mu   sync.Mutex
	// answer runs every command but hello; it is called under mu. A nil
	// reply closes the connection without one.
	answer func(cmd *server.Command) bson.D
}

func (f *fakeSet) Handle(_ context.Context, c *server.Conn, cmd *server.Command) bson.D {
	if cmd.Name == "hello" {
		return bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "setName", Value: f.name},
			{Key: "hosts", Value: bson.A{f.addr}}, {Key: "ok", Value: 1.0}}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	reply := f.answer(cmd)
	if reply == nil { // the member goes away mid-command
		c.HangUp()
		return bson.D{}
	}
	return reply
}

func startFakeSet(t testing.TB, name string, answer func(*server.Command) bson.D) *fakeSet {
	t.Helper()
	f := &fakeSet{name: name, answer: answer}
	srv := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, f)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	f.addr = srv.Addr().String()
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return f
}

// fakeConfig is a config server: collections of documents, found by
// equality on top-level fields, and a count of reads per collection.
type fakeConfig struct {
	docs  map[string][]bson.D
	reads map[string]int
	// dupUpserts upserts answer E11000, as the loser of two concurrent
	// upserts of one _id does; updates counts the update commands.
	dupUpserts, updates int
}

func (c *fakeConfig) answer(cmd *server.Command) bson.D {
	coll, _ := cmd.Body[0].Value.(string)
	switch cmd.Name {
	case "find":
		c.reads[coll]++
		filter := bsonutil.ToD(mustField(cmd.Body, "filter"))
		batch := bson.A{}
		for _, d := range c.docs[coll] {
			if matchesEq(d, filter) {
				batch = append(batch, d)
			}
		}
		return bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: batch}, {Key: "id", Value: int64(0)},
			{Key: "ns", Value: "config." + coll}}}, {Key: "ok", Value: 1.0}}
	case "update":
		c.updates++
		if c.dupUpserts > 0 {
			c.dupUpserts--
			return bson.D{{Key: "n", Value: int32(0)}, {Key: "writeErrors", Value: bson.A{bson.D{{Key: "index", Value: int32(0)},
				{Key: "code", Value: int32(11000)}, {Key: "errmsg", Value: "E11000 duplicate key error"}}}}, {Key: "ok", Value: 1.0}}
		}
	case "insert":
		for _, d := range bsonutil.ToA(mustField(cmd.Body, "documents")) {
			c.docs[coll] = append(c.docs[coll], bsonutil.ToD(d))
		}
	}
	return bson.D{{Key: "n", Value: int32(1)}, {Key: "ok", Value: 1.0}}
}

func matchesEq(d, filter bson.D) bool {
	for _, e := range filter {
		v, _ := bsonutil.Field(d, e.Key)
		if bsonutil.Compare(v, e.Value) != 0 {
			return false
		}
	}
	return true
}

// fakeShard answers every routed command with an empty success, after
// answering stale StaleConfig (13388) to the first ones that carry a
// shard version; it counts the versioned commands it saw.
type fakeShard struct {
	stale     int
	hangUps   int // connections to close instead of answering a versioned command
	versioned map[string]int
	// staleAt, when positive, makes the next insert or bulkWrite stop at
	// that statement with StaleConfig, having written those before it.
	staleAt    int
	inserts    []bson.D          // every insert command received
	bulkWrites []bson.D          // every bulkWrite command received
	last       map[string]bson.D // the last body of each command
	lastDB     map[string]string // and the database it named
	// epoch, when set, is the incarnation of db.sharded the shard holds:
	// a shardVersion of another answers StaleConfig, as a shard does
	// after a drop and re-shard.
	epoch bson.ObjectID
}

func (s *fakeShard) answer(cmd *server.Command) bson.D {
	if s.last == nil {
		s.last, s.lastDB = map[string]bson.D{}, map[string]string{}
	}
	s.last[cmd.Name], s.lastDB[cmd.Name] = cmd.Body, cmd.DB
	if cmd.Name == "insert" {
		s.inserts = append(s.inserts, cmd.Body)
		if at := s.staleAt; at > 0 {
			s.staleAt = 0
			return bson.D{{Key: "n", Value: int32(at)}, {Key: "writeErrors", Value: bson.A{bson.D{
				{Key: "index", Value: int32(at)}, {Key: "code", Value: int32(13388)}, {Key: "errmsg", Value: "version mismatch"}}}},
				{Key: "ok", Value: 1.0}}
		}
	}
	if cmd.Name == "bulkWrite" {
		s.bulkWrites = append(s.bulkWrites, cmd.Body)
		if at := s.staleAt; at > 0 {
			s.staleAt = 0
			return staleBulkWriteReply(at)
		}
	}
	if v, ok := routedVersion(cmd.Body); ok {
		s.versioned[cmd.Name]++
		if e, _ := bsonutil.Field(bsonutil.ToD(v), "e"); !s.epoch.IsZero() && e != s.epoch {
			return staleReply(cmd.Name)
		}
		if s.hangUps > 0 {
			s.hangUps--
			return nil
		}
		if s.stale > 0 {
			s.stale--
			return staleReply(cmd.Name)
		}
	}
	return append(emptyReply(cmd), bson.E{Key: "ok", Value: 1.0})
}

// routedVersion is the shardVersion a command carries: its own, or a
// bulkWrite's in its first nsInfo entry.
func routedVersion(body bson.D) (any, bool) {
	if body[0].Key == "bulkWrite" {
		for _, entry := range bsonutil.ToA(mustField(body, "nsInfo")) {
			return bsonutil.Field(bsonutil.ToD(entry), "shardVersion")
		}
	}
	return bsonutil.Field(body, "shardVersion")
}

// staleReply is a shard's StaleConfig: for a write, as statement 0's
// write error with ok 1 and nothing written (the write path stops the
// batch there); for anything else, the command's error.
func staleReply(name string) bson.D {
	switch name {
	case "insert", "update", "delete":
		return bson.D{{Key: "n", Value: int32(0)}, {Key: "writeErrors", Value: bson.A{bson.D{
			{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(13388)}, {Key: "errmsg", Value: "version mismatch"}}}},
			{Key: "ok", Value: 1.0}}
	}
	return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "version mismatch"},
		{Key: "code", Value: int32(13388)}, {Key: "codeName", Value: "StaleConfig"}}
}

// emptyReply is a success of a command's shape with nothing in it.
func emptyReply(cmd *server.Command) bson.D {
	coll, _ := cmd.Body[0].Value.(string)
	switch cmd.Name {
	case "find", "aggregate", "listIndexes", "listCollections":
		return cursorReply(cmd.DB+"."+coll, 0, "firstBatch", bson.A{})
	case "insert":
		return bson.D{{Key: "n", Value: int32(len(bsonutil.ToA(mustField(cmd.Body, "documents"))))}}
	case "count", "delete":
		return bson.D{{Key: "n", Value: int32(0)}}
	case "update":
		return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}}
	case "distinct":
		return bson.D{{Key: "values", Value: bson.A{}}}
	case "findAndModify":
		return bson.D{{Key: "lastErrorObject", Value: bson.D{{Key: "n", Value: int32(0)}}}, {Key: "value", Value: nil}}
	case "listDatabases":
		return bson.D{{Key: "databases", Value: bson.A{}}}
	case "bulkWrite":
		return bulkWriteReply(bsonutil.ToA(mustField(cmd.Body, "ops")))
	}
	return bson.D{}
}

// fakeCluster is a router over a fake config server and one fake shard,
// shA, primary of database db, which holds db.sharded (hashed _id, one
// chunk) and db.plain (unsharded).
type fakeCluster struct {
	router *Router
	config *fakeConfig
	shard  *fakeShard
	sets   []*fakeSet
	// shards are every fake shard of a cluster of several.
	shards []*fakeShard
}

func startFakeCluster(t testing.TB) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{config: &fakeConfig{docs: map[string][]bson.D{}, reads: map[string]int{}},
		shard: &fakeShard{versioned: map[string]int{}}}
	cfgSet := startFakeSet(t, "cfg", fc.config.answer)
	shardSet := startFakeSet(t, "shA", fc.shard.answer)
	fc.sets = []*fakeSet{cfgSet, shardSet}
	fc.config.docs = clusterMetadata(t, shardSet.addr, bson.NewObjectID())
	fc.router = startTestRouter(t, cfgSet.addr)
	return fc
}

// startTestRouter is a router over the config server at cfgAddr, closed
// when the test ends.
func startTestRouter(t testing.TB, cfgAddr string) *Router {
	t.Helper()
	r, err := New(Config{ConfigDB: "cfg/" + cfgAddr, Version: "8.0.0", Host: "router:1",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// clusterMetadata is the config documents of the fake cluster.
func clusterMetadata(t testing.TB, shardAddr string, epoch bson.ObjectID) map[string][]bson.D {
	t.Helper()
	return shardedMetadata(t, []fakeShardAddr{{"shA", shardAddr}}, epoch)
}

// fakeShardAddr is a shard's id and its one member's address.
type fakeShardAddr struct{ id, addr string }

// shardedMetadata is the config documents of a cluster of shards, the
// first of them primary of database db, which holds db.sharded (hashed
// _id, its chunks spread over the shards) and db.plain (unsharded).
func shardedMetadata(t testing.TB, shards []fakeShardAddr, epoch bson.ObjectID) map[string][]bson.D {
	t.Helper()
	pattern, err := shardkey.Parse(bson.D{{Key: "_id", Value: "hashed"}})
	if err != nil {
		t.Fatal(err)
	}
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	at := bson.Timestamp{T: uint32(epoch.Timestamp().Unix()), I: 1} // the incarnation's creation time
	var ids []string
	for _, sh := range shards {
		ids = append(ids, sh.id)
	}
	chunks, err := shardmeta.HashedInitialChunks(shardmeta.InitialLayout{Pattern: pattern, UUID: uuid, Epoch: epoch, ValidAfter: at, Shards: ids})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]bson.D{}
	add := func(coll string, v any) {
		raw, err := shardmeta.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		var d bson.D
		if err := bson.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		docs[coll] = append(docs[coll], d)
	}
	for _, sh := range shards {
		add(shardmeta.ShardsCollection, shardmeta.Shard{ID: sh.id, Host: sh.id + "/" + sh.addr, State: shardmeta.ShardStateActive})
	}
	add(shardmeta.DatabasesCollection, shardmeta.Database{ID: "db", Primary: ids[0],
		Version: shardmeta.DatabaseVersion{UUID: uuid, Timestamp: at, LastMod: 1}})
	add(shardmeta.CollectionsCollection, shardmeta.Collection{ID: "db.sharded", Epoch: epoch, Timestamp: at, UUID: uuid, Key: pattern.Spec()})
	for _, c := range chunks {
		add(shardmeta.ChunksCollection, c)
	}
	return docs
}

// run sends one command through the router as a client would.
func (fc *fakeCluster) run(db string, body bson.D) bson.D {
	body = append(body, bson.E{Key: "$db", Value: db})
	return fc.router.Handle(context.Background(), nil, &server.Command{DB: db, Name: body[0].Key, Body: body})
}

// setStale makes the shard answer StaleConfig n times from now.
func (fc *fakeCluster) setStale(n int) { fc.setFaults(n, 0) }

// setFaults makes the shard answer StaleConfig stale times, or close the
// connection hangUps times, from now.
func (fc *fakeCluster) setFaults(stale, hangUps int) {
	for _, s := range fc.sets {
		s.mu.Lock()
	}
	fc.shard.stale, fc.shard.hangUps = stale, hangUps
	fc.shard.versioned = map[string]int{}
	for _, s := range fc.sets {
		s.mu.Unlock()
	}
}

func (fc *fakeCluster) counts(name, coll string) (versioned, configReads int) {
	for _, s := range fc.sets {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	return fc.shard.versioned[name], fc.config.reads[coll]
}

// bulkWriteReply is a shard's bulkWrite answer that writes each insert
// and matches nothing else.
func bulkWriteReply(ops bson.A) bson.D {
	items := bson.A{}
	var inserted int32
	for i, raw := range ops {
		item := bson.D{{Key: "ok", Value: 1.0}, {Key: "idx", Value: int32(i)}, {Key: "n", Value: int32(0)}}
		switch opKind(bsonutil.ToD(raw)) {
		case "insert":
			item[2].Value = int32(1)
			inserted++
		case "update":
			item = append(item, bson.E{Key: "nModified", Value: int32(0)})
		}
		items = append(items, item)
	}
	return bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(0)}, {Key: "firstBatch", Value: items},
		{Key: "ns", Value: bulkNS}}}, {Key: "nErrors", Value: int32(0)}, {Key: "nInserted", Value: inserted},
		{Key: "nMatched", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "nUpserted", Value: int32(0)},
		{Key: "nDeleted", Value: int32(0)}}
}

// staleBulkWriteReply is an ordered bulkWrite that wrote ops 0..at-1 (all
// inserts) and stopped at op at with StaleConfig.
func staleBulkWriteReply(at int) bson.D {
	items := bson.A{}
	for i := range at {
		items = append(items, bson.D{{Key: "ok", Value: 1.0}, {Key: "idx", Value: int32(i)}, {Key: "n", Value: int32(1)}})
	}
	items = append(items, bson.D{{Key: "ok", Value: 0.0}, {Key: "idx", Value: int32(at)}, {Key: "code", Value: int32(13388)},
		{Key: "errmsg", Value: "version mismatch"}, {Key: "n", Value: int32(0)}})
	return bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(0)}, {Key: "firstBatch", Value: items},
		{Key: "ns", Value: bulkNS}}}, {Key: "nErrors", Value: int32(1)}, {Key: "nInserted", Value: int32(at)}, {Key: "ok", Value: 1.0}}
}
