package integration

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/wire"
)

// rawCall sends one OP_MSG command with nothing added by a driver (no
// $readPreference) and returns the reply.
func rawCall(t *testing.T, addr string, cmd bson.D) bson.D {
	t.Helper()
	reply, err := sendCommand(addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// sendCommand is rawCall for a goroutine: it returns its error.
func sendCommand(addr string, cmd bson.D) (bson.D, error) {
	doc, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, 0, doc)); err != nil {
		return nil, err
	}
	msg, err := wire.ReadMessage(nc, wire.NewCodec())
	if err != nil {
		return nil, err
	}
	return msg.Command()
}

func codeOf(d bson.D) int32 {
	for _, e := range d {
		if e.Key == "code" {
			c, _ := e.Value.(int32)
			return c
		}
	}
	return 0
}

func TestReplicaSetHelloAndRoles(t *testing.T) {
	rs := startReplSet(t, 3)
	primary := rs.waitPrimary(-1, 10*time.Second)
	for i, addr := range rs.addrs {
		h := rs.hello(i)
		if got := field(t, h, "setName"); got != "rs0" {
			t.Fatalf("member %d setName %v", i, got)
		}
		if got := field(t, h, "me"); got != addr {
			t.Fatalf("member %d me %v, want %s", i, got, addr)
		}
		hosts, _ := field(t, h, "hosts").(bson.A)
		if len(hosts) != 3 {
			t.Fatalf("member %d hosts %v", i, hosts)
		}
		writable := field(t, h, "isWritablePrimary") == true
		secondary := field(t, h, "secondary") == true
		if writable != (i == primary) || secondary == writable {
			t.Fatalf("member %d: isWritablePrimary %v secondary %v, primary is %d", i, writable, secondary, primary)
		}
		if got := field(t, h, "primary"); got != rs.addrs[primary] {
			t.Fatalf("member %d says primary is %v, want %s", i, got, rs.addrs[primary])
		}
		tv, _ := field(t, h, "topologyVersion").(bson.D)
		if len(tv) != 2 {
			t.Fatalf("member %d topologyVersion %v", i, tv)
		}
		if _, hasElection := lookupD(h, "electionId"); hasElection != (i == primary) {
			t.Fatalf("member %d electionId presence wrong: %v", i, h)
		}
	}
	secondary := (primary + 1) % 3
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}, {Key: "$db", Value: "test"}}
	if code := codeOf(rawCall(t, rs.addrs[secondary], ins)); code != 10107 {
		t.Fatalf("insert on a secondary: code %d, want 10107", code)
	}
	find := bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "test"}}
	if code := codeOf(rawCall(t, rs.addrs[secondary], find)); code != 13435 {
		t.Fatalf("find on a secondary without read preference: code %d, want 13435", code)
	}
	withPref := append(find, bson.E{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondaryPreferred"}}})
	if code := codeOf(rawCall(t, rs.addrs[secondary], withPref)); code != 0 {
		t.Fatalf("find on a secondary with secondaryPreferred: code %d", code)
	}
	// As mongod: a secondary answers, without a read preference, what may
	// run anywhere (secondaryAllowed kAlways: dbStats, dbHash, validate),
	// refuses the reads that must opt in (listDatabases, explain,
	// usersInfo) and makes no user.
	secondaryPref := bson.E{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondaryPreferred"}}}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "dbStats", Value: 1}, {Key: "$db", Value: "test"}}, 0},
		{bson.D{{Key: "dbHash", Value: 1}, {Key: "$db", Value: "test"}}, 0},
		{bson.D{{Key: "validate", Value: "nosuch"}, {Key: "$db", Value: "test"}}, 26},
		{bson.D{{Key: "listDatabases", Value: 1}, {Key: "$db", Value: "admin"}}, 13435},
		{bson.D{{Key: "listDatabases", Value: 1}, {Key: "$db", Value: "admin"}, secondaryPref}, 0},
		{bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}, {Key: "$db", Value: "test"}}, 13435},
		{bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}, {Key: "$db", Value: "test"}, secondaryPref}, 0},
		{bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}, {Key: "$db", Value: "admin"}}, 10107},
		{bson.D{{Key: "usersInfo", Value: "u"}, {Key: "$db", Value: "admin"}}, 13435},
		{bson.D{{Key: "usersInfo", Value: "u"}, {Key: "$db", Value: "admin"}, secondaryPref}, 0},
	} {
		if reply := rawCall(t, rs.addrs[secondary], tc.cmd); codeOf(reply) != tc.code {
			t.Fatalf("%v on a secondary: code %d, want %d: %v", tc.cmd, codeOf(reply), tc.code, reply)
		}
	}
	retryable := append(ins[:len(ins)-1:len(ins)-1], bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
		bson.E{Key: "txnNumber", Value: int64(1)}, bson.E{Key: "$db", Value: "test"})
	reply := rawCall(t, rs.addrs[secondary], retryable)
	labels, _ := lookupD(reply, "errorLabels")
	if codeOf(reply) != 10107 || !slices.Contains(labels.(bson.A), any("RetryableWriteError")) {
		t.Fatalf("retryable insert on a secondary: %v", reply)
	}
	for _, name := range []string{"operationTime", "$clusterTime"} {
		if _, ok := lookupD(reply, name); !ok {
			t.Fatalf("reply lacks %s: %v", name, reply)
		}
	}
}

func lookupD(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

func TestReplicaSetCommandsAndErrors(t *testing.T) {
	standalone := startServer(t, app.Config{})
	c := connect(t, standalone)
	wantCode(t, c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: bson.D{}}}).Err(), 76, "replication")
	wantCode(t, c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetGetStatus", Value: 1}}).Err(), 76, "--replSet")

	rs := startReplSet(t, 3)
	admin := rs.client().Database("admin")
	var status struct {
		Set     string `bson:"set"`
		MyState int32  `bson:"myState"`
		Members []struct {
			Name     string `bson:"name"`
			StateStr string `bson:"stateStr"`
		} `bson:"members"`
	}
	if err := admin.RunCommand(ctxT(t), bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, m := range status.Members {
		states[m.StateStr]++
	}
	if status.Set != "rs0" || status.MyState != 1 || states["PRIMARY"] != 1 || states["SECONDARY"] != 2 {
		t.Fatalf("replSetGetStatus: %+v", status)
	}
	var conf struct {
		Config struct {
			ID      string   `bson:"_id"`
			Version int32    `bson:"version"`
			Members []bson.D `bson:"members"`
		} `bson:"config"`
	}
	if err := admin.RunCommand(ctxT(t), bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&conf); err != nil {
		t.Fatal(err)
	}
	if conf.Config.ID != "rs0" || conf.Config.Version != 1 || len(conf.Config.Members) != 3 {
		t.Fatalf("replSetGetConfig: %+v", conf)
	}
	wantCode(t, admin.RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: bson.D{}}}).Err(), 23, "already initialized")

	// A member started with --replSet but not initiated, and a bad config.
	loose := startReplSetMember(t, rs.bin)
	lc := quickClient(t, loose, 5*time.Second)
	wantCode(t, lc.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetGetStatus", Value: 1}}).Err(), 94, "no replset config")
	bad := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: "elsewhere:1"}}}}}
	wantCode(t, lc.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: bad}}).Err(), 93, "maps to this node")
	h := rawCall(t, loose, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if field(t, h, "isreplicaset") != true {
		t.Fatalf("uninitiated member hello: %v", h)
	}

	primary := rs.waitPrimary(-1, 5*time.Second)
	for _, tc := range []struct {
		w    any
		code int32
	}{{w: 5, code: 100}, {w: 3, code: 0}, {w: "majority", code: 0}} {
		d := rawCall(t, rs.addrs[primary], bson.D{{Key: "insert", Value: "wc"}, {Key: "documents", Value: bson.A{bson.D{{Key: "w", Value: tc.w}}}},
			{Key: "writeConcern", Value: bson.D{{Key: "w", Value: tc.w}, {Key: "wtimeout", Value: int32(5000)}}}, {Key: "$db", Value: "test"}})
		wce, has := lookupD(d, "writeConcernError")
		if (tc.code != 0) != has || (has && codeOf(wce.(bson.D)) != tc.code) {
			t.Fatalf("w=%v: %v", tc.w, d)
		}
	}
}

// startReplSetMember starts one more --replSet rs0 member, not initiated.
func startReplSetMember(t *testing.T, bin string) string {
	addr := freePort(t)
	if _, err := startMayfly(t, bin, t.TempDir(), addr, "--replSet", "rs0"); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestReplicaSetReplicatesWritesIndexesAndExpiry(t *testing.T) {
	rs := startReplSet(t, 3)
	cl := rs.client()
	db := cl.Database("test")
	coll := db.Collection("sessions")
	ctx := ctxT(t)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "token", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var docs []any
	for i := 0; i < 200; i++ {
		at := now.Add(time.Hour)
		if i%2 == 0 {
			at = now // expires in a second
		}
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "token", Value: i}, {Key: "at", Value: at}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Every member, read as a secondary read would be, never returns an
	// expired document and converges to the 100 live ones.
	rs.waitLiveOnEveryMember(t, "sessions", "at", time.Second, 100)
	rs.waitSameHash("test", 10*time.Second)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "token", Value: 1}, {Key: "at", Value: now}})
	wantCode(t, err, 11000, "token_1")
	rs.wantStoredCount(t, "sessions", 100)
	// A catalog change (a new collection, an index) keeps every member's
	// counts of the collections it held, and the writes after it add.
	if _, err := db.Collection("other").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// An array under an indexed field makes the index multikey: the
	// insert changes the catalog and the count together.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000}, {Key: "token", Value: 1000}, {Key: "u", Value: bson.A{1, 2}}, {Key: "at", Value: now.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	rs.wantStoredCount(t, "sessions", 101)
	rs.wantStoredCount(t, "other", 1)
	replicateManyWrites(t, rs, db.Collection("other"))
}

// replicateManyWrites runs a multi-document update and delete, which
// commit their documents in groups, on other (holding {_id: 1}) and
// wants every member the same after them.
func replicateManyWrites(t *testing.T, rs *replSet, other *mongo.Collection) {
	t.Helper()
	ctx := ctxT(t)
	var docs []any
	for i := 2; i < 152; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}})
	}
	if _, err := other.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	up, err := other.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || up.MatchedCount != 151 || up.ModifiedCount != 151 {
		t.Fatalf("updateMany: %+v (%v), want 151 matched and modified", up, err)
	}
	del, err := other.DeleteMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 100}}}})
	if err != nil || del.DeletedCount != 52 {
		t.Fatalf("deleteMany: %+v (%v), want 52 deleted", del, err)
	}
	rs.waitSameHash("test", 10*time.Second)
	rs.wantStoredCount(t, "other", 99)
}

// wantStoredCount waits until every member's stored count of coll, from
// its counters as $collStats reads them, is want.
func (rs *replSet) wantStoredCount(t *testing.T, coll string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	stats := bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}}
	for i, p := range rs.procs {
		if p == nil {
			continue
		}
		c := rs.direct(i).Database("test").Collection(coll)
		for {
			var out []struct {
				Count int64 `bson:"count"`
			}
			cur, err := c.Aggregate(ctxT(t), stats)
			if err == nil {
				err = cur.All(ctxT(t), &out)
			}
			if err == nil && len(out) == 1 && out[0].Count == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: $collStats count of %s = %v (%v), want %d", i, coll, out, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestReplicaSetRetryableWriteAppliesOnce(t *testing.T) {
	rs := startReplSet(t, 3)
	primary := rs.waitPrimary(-1, 10*time.Second)
	c := rs.direct(primary)
	db := c.Database("test")
	if _, err := db.Collection("n").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	update := func(txn int64) bson.D {
		return bson.D{{Key: "update", Value: "n"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}},
			{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: txn}, {Key: "$db", Value: "test"}}
	}
	first := rawCall(t, rs.addrs[primary], update(7))
	again := rawCall(t, rs.addrs[primary], update(7))
	if field(t, first, "nModified") != int32(1) || field(t, again, "nModified") != int32(1) {
		t.Fatalf("replies: %v / %v", first, again)
	}
	if ids, _ := lookupD(again, "retriedStmtIds"); ids == nil {
		t.Fatalf("retry without retriedStmtIds: %v", again)
	}
	if code := codeOf(rawCall(t, rs.addrs[primary], update(6))); code != 225 {
		t.Fatalf("older txnNumber: code %d, want 225", code)
	}
	var doc struct{ N int }
	if err := db.Collection("n").FindOne(ctxT(t), bson.D{}).Decode(&doc); err != nil || doc.N != 1 {
		t.Fatalf("counter %d after a write and its retry (%v)", doc.N, err)
	}
	// The record replicated: the retry on a new primary answers too.
	rs.kill9(primary)
	next := rs.waitPrimary(primary, 10*time.Second)
	retried := rawCall(t, rs.addrs[next], update(7))
	if field(t, retried, "nModified") != int32(1) {
		t.Fatalf("retry on the new primary: %v", retried)
	}
	nc := rs.direct(next)
	if err := nc.Database("test").Collection("n").FindOne(ctxT(t), bson.D{}).Decode(&doc); err != nil || doc.N != 1 {
		t.Fatalf("counter %d after a retry on the new primary (%v)", doc.N, err)
	}
	// A client bulkWrite retried with the same txnNumber applies once.
	bulk := bson.D{{Key: "bulkWrite", Value: int32(1)},
		{Key: "ops", Value: bson.A{
			bson.D{{Key: "update", Value: int32(0)}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "updateMods", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}}}},
			bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: 2}}}},
			bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: 3}}}}, // a run of inserts: one group
		}},
		{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.n"}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(8)}, {Key: "$db", Value: "admin"}}
	for try := 0; try < 2; try++ {
		if r := rawCall(t, rs.addrs[next], bulk); codeOf(r) != 0 || field(t, r, "nErrors") != int32(0) {
			t.Fatalf("bulkWrite try %d: %v", try, r)
		}
	}
	if err := nc.Database("test").Collection("n").FindOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc.N != 11 {
		t.Fatalf("counter %d after a bulkWrite and its retry (%v), want 11", doc.N, err)
	}
	wc := writeconcern.Majority()
	if _, err := rs.client(options.Client().SetWriteConcern(wc)).Database("test").Collection("n").UpdateOne(context.Background(), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaSetRetryOverlapsItsFirstAttempt sends a retryable write's
// retry while its first attempt still runs: an fsync lock holds the first
// after it has checked its session out. The retry waits for the session,
// not for the lock, and then answers the first attempt's result; the
// update applies once.
func TestReplicaSetRetryOverlapsItsFirstAttempt(t *testing.T) {
	rs := startReplSet(t, 1)
	primary := rs.waitPrimary(-1, 10*time.Second)
	c := rs.direct(primary)
	admin := c.Database("admin")
	coll := c.Database("test").Collection("n")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("overlapping-try!")}}}
	attempt := func(i int) bson.D {
		return bson.D{{Key: "update", Value: "n"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}},
			{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(4)}, {Key: "comment", Value: rowComment(i)}, {Key: "$db", Value: "test"}}
	}
	runCmd(t, admin, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}})
	replies, errs := make([]bson.D, 2), make([]error, 2)
	var wg sync.WaitGroup
	send := func(i int) {
		wg.Add(1)
		go func() { defer wg.Done(); replies[i], errs[i] = sendCommand(rs.addrs[primary], attempt(i)) }()
	}
	send(0)
	waitQueuedWriters(t, c, 1)
	send(1)
	waitRunning(t, admin, []int{0, 1})
	time.Sleep(200 * time.Millisecond) // time for the retry to reach the lock, were it not held back
	if q := serverStatus(t, c).GlobalLock.CurrentQueue.Writers; q != 1 {
		t.Fatalf("%d writes wait for the fsync lock; the retry should wait for its session instead", q)
	}
	runCmd(t, admin, bson.D{{Key: "fsyncUnlock", Value: 1}})
	wg.Wait()
	retried := 0
	for i, r := range replies {
		if errs[i] != nil || codeOf(r) != 0 || field(t, r, "nModified") != int32(1) {
			t.Fatalf("attempt %d: %v (%v)", i, r, errs[i])
		}
		if ids, _ := lookupD(r, "retriedStmtIds"); ids != nil {
			retried++
		}
	}
	if retried != 1 {
		t.Fatalf("%d of the two attempts answered as a retry, want 1: %v", retried, replies)
	}
	var doc struct{ N int }
	if err := coll.FindOne(ctxT(t), bson.D{}).Decode(&doc); err != nil || doc.N != 1 {
		t.Fatalf("counter %d after two overlapping attempts of one write (%v)", doc.N, err)
	}
}

// waitQueuedWriters waits up to 10 s for n writes to wait for an fsync
// lock (serverStatus.globalLock.currentQueue.writers).
func waitQueuedWriters(t *testing.T, c *mongo.Client, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for serverStatus(t, c).GlobalLock.CurrentQueue.Writers != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes never came to wait for the fsync lock", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// storedDocs is the collection's stored document count ($collStats),
// expired documents not yet deleted included.
func storedDocs(t *testing.T, coll *mongo.Collection) int64 {
	t.Helper()
	cur, err := coll.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Count int64 `bson:"count"`
	}
	if err := cur.All(ctxT(t), &out); err != nil || len(out) != 1 {
		t.Fatalf("$collStats: %v %v", out, err)
	}
	return out[0].Count
}

// waitLiveOnEveryMember reads test.coll on every member as a secondary
// read would, until each returns and stores exactly live documents; a
// document returned with field (a date) plus ttl past fails the test at
// once.
func (rs *replSet) waitLiveOnEveryMember(t *testing.T, coll, field string, ttl time.Duration, live int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := range rs.addrs {
		mcoll := rs.direct(i).Database("test").Collection(coll, options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
		for {
			got := findAll(t, mcoll)
			readAt := time.Now()
			for _, d := range got {
				at, _ := d.Lookup(field).DateTimeOK()
				if expires := time.UnixMilli(at).Add(ttl); !expires.After(readAt.Add(-50 * time.Millisecond)) {
					t.Fatalf("member %d returned a document expired at %v (read at %v)", i, expires, readAt)
				}
			}
			stored := storedDocs(t, mcoll)
			if len(got) == live && stored == int64(live) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: %d documents returned, %d stored", i, len(got), stored)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	rs.waitSameHash("test", 10*time.Second)
}

// findAll returns every document of coll, raw.
func findAll(t *testing.T, coll *mongo.Collection) []bson.Raw {
	t.Helper()
	ctx := ctxT(t)
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.Raw
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	return got
}
