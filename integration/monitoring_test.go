package integration

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

func seedMonitored(t *testing.T, db *mongo.Database, n int) {
	t.Helper()
	createTTL(t, db, "events", "at", 3600)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "events"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "kind", Value: 1}, {Key: "n", Value: -1}}}, {Key: "name", Value: "kind_n"}},
	}}})
	var docs []any
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "kind", Value: i % 3}, {Key: "n", Value: i},
			{Key: "at", Value: time.Now()}, {Key: "pad", Value: strings.Repeat("x", 100)}})
	}
	if _, err := db.Collection("events").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("other").InsertOne(ctxT(t), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestCollStatsDBStatsDataSizeAgreeWithCounts(t *testing.T) {
	s := startServer(t, app.Config{DataDir: t.TempDir()})
	db := connect(t, s).Database("mon")
	seedMonitored(t, db, 500)
	ctx := ctxT(t)
	n, err := db.Collection("events").CountDocuments(ctx, bson.D{})
	if err != nil || n != 500 {
		t.Fatalf("countDocuments %d %v", n, err)
	}

	cs := runCmd(t, db, bson.D{{Key: "collStats", Value: "events"}})
	if got := toInt64(field(t, cs, "count")); got != n {
		t.Fatalf("collStats count %d, countDocuments %d", got, n)
	}
	size := toInt64(field(t, cs, "size"))
	if size < 500*100 || size > 500*300 {
		t.Fatalf("collStats size %d for 500 documents of ~150 bytes", size)
	}
	var sum int64
	sizes := field(t, cs, "indexSizes").(bson.D)
	if len(sizes) != 3 {
		t.Fatalf("indexSizes %v", sizes)
	}
	for _, e := range sizes {
		if toInt64(e.Value) <= 500*4 {
			t.Fatalf("index %s size %d: at least a few bytes per entry", e.Key, toInt64(e.Value))
		}
		sum += toInt64(e.Value)
	}
	if toInt64(field(t, cs, "totalIndexSize")) != sum || toInt64(field(t, cs, "nindexes")) != 3 {
		t.Fatalf("totalIndexSize/nindexes disagree: %v", cs)
	}
	scaled := runCmd(t, db, bson.D{{Key: "collStats", Value: "events"}, {Key: "scale", Value: 1024}})
	if toInt64(field(t, scaled, "size")) != size/1024 || toInt64(field(t, scaled, "scaleFactor")) != 1024 {
		t.Fatalf("scale 1024: %v", scaled)
	}
	missing := runCmd(t, db, bson.D{{Key: "collStats", Value: "nope"}})
	if toInt64(field(t, missing, "count")) != 0 || field(t, missing, "ns") != "mon.nope" {
		t.Fatalf("collStats of a missing collection: %v", missing)
	}

	ds := runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if toInt64(field(t, ds, "objects")) != n+1 || toInt64(field(t, ds, "collections")) != 2 || toInt64(field(t, ds, "indexes")) != 4 {
		t.Fatalf("dbStats: %v", ds)
	}
	if toInt64(field(t, ds, "dataSize")) < size || toInt64(field(t, ds, "indexSize")) < sum {
		t.Fatalf("dbStats sums are below the collection's: %v", ds)
	}
	if toInt64(field(t, ds, "fsTotalSize")) <= 0 || toInt64(field(t, ds, "fsUsedSize")) <= 0 {
		t.Fatalf("dbStats on disk reports its filesystem: %v", ds)
	}

	whole := runCmd(t, db, bson.D{{Key: "dataSize", Value: "mon.events"}})
	if toInt64(field(t, whole, "size")) != size || toInt64(field(t, whole, "numObjects")) != n {
		t.Fatalf("dataSize %v, collStats size %d", whole, size)
	}
	part := runCmd(t, db, bson.D{{Key: "dataSize", Value: "mon.events"}, {Key: "keyPattern", Value: bson.D{{Key: "n", Value: 1}}},
		{Key: "min", Value: bson.D{{Key: "n", Value: 100}}}, {Key: "max", Value: bson.D{{Key: "n", Value: 200}}}})
	if toInt64(field(t, part, "numObjects")) != 100 {
		t.Fatalf("dataSize over [100, 200): %v", part)
	}
}

// mongostatStatus mirrors the serverStatus fields mongostat decodes, with
// its types: a field of the wrong type fails the decode as it fails
// mongostat.
type mongostatStatus struct {
	Host      string           `bson:"host"`
	Version   string           `bson:"version"`
	Process   string           `bson:"process"`
	Pid       int64            `bson:"pid"`
	Uptime    int64            `bson:"uptime"`
	LocalTime time.Time        `bson:"localTime"`
	Asserts   map[string]int64 `bson:"asserts"`
	ExtraInfo *struct {
		PageFaults int64 `bson:"page_faults"`
	} `bson:"extra_info"`
	Connections *struct{ Current, Available, TotalCreated int64 } `bson:"connections"`
	GlobalLock  *struct {
		TotalTime    int64 `bson:"totalTime"`
		CurrentQueue *struct {
			Total, Readers, Writers int64
		} `bson:"currentQueue"`
		ActiveClients *struct {
			Total, Readers, Writers int64
		} `bson:"activeClients"`
	} `bson:"globalLock"`
	Network *struct {
		BytesIn     int64 `bson:"bytesIn"`
		BytesOut    int64 `bson:"bytesOut"`
		NumRequests int64 `bson:"numRequests"`
	} `bson:"network"`
	Opcounters *struct {
		Insert, Query, Update, Delete, GetMore, Command int64
	} `bson:"opcounters"`
	Mem *struct {
		Bits, Resident, Virtual int64
		Supported               any
	} `bson:"mem"`
	OpLatencies *struct {
		Reads, Writes, Commands struct{ Latency, Ops int64 }
	} `bson:"opLatencies"`
}

func serverStatus(t *testing.T, c *mongo.Client) mongostatStatus {
	t.Helper()
	var st mongostatStatus
	// mongostat's exact command.
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}, {Key: "recordStats", Value: 0}}).Decode(&st); err != nil {
		t.Fatalf("serverStatus decoded as mongostat does: %v", err)
	}
	return st
}

func TestServerStatusSectionsForMongostat(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	db := c.Database("mon")
	before := serverStatus(t, c)
	if before.Network == nil || before.GlobalLock == nil || before.Mem == nil || before.ExtraInfo == nil || before.OpLatencies == nil || before.Asserts == nil {
		t.Fatalf("serverStatus lacks a section mongostat reads: %+v", before)
	}
	seedMonitored(t, db, 200)
	for range 10 {
		if err := db.Collection("events").FindOne(ctxT(t), bson.D{{Key: "_id", Value: 3}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.RunCommand(ctxT(t), bson.D{{Key: "insert", Value: "events"}, {Key: "documents", Value: "not an array"}}).Err()
	after := serverStatus(t, c)

	if d := after.Network.BytesIn - before.Network.BytesIn; d < 200*100 {
		t.Fatalf("network.bytesIn grew by %d after inserting 200 documents of >100 bytes", d)
	}
	if after.Network.BytesOut <= before.Network.BytesOut || after.Network.NumRequests < before.Network.NumRequests+13 {
		t.Fatalf("network: before %+v after %+v", before.Network, after.Network)
	}
	if after.Opcounters.Query-before.Opcounters.Query != 10 || after.OpLatencies.Reads.Ops-before.OpLatencies.Reads.Ops < 10 {
		t.Fatalf("10 finds: opcounters %+v, opLatencies %+v", after.Opcounters, after.OpLatencies)
	}
	if after.OpLatencies.Writes.Ops-before.OpLatencies.Writes.Ops < 2 || after.OpLatencies.Writes.Latency <= before.OpLatencies.Writes.Latency {
		t.Fatalf("writes: %+v", after.OpLatencies.Writes)
	}
	if after.Asserts["user"] != before.Asserts["user"]+1 {
		t.Fatalf("one failed command counts one user assert: %v → %v", before.Asserts, after.Asserts)
	}
	if after.Mem.Resident < 5 || after.Mem.Virtual < after.Mem.Resident {
		t.Fatalf("mem (MB) must be the process's true sizes: %+v", after.Mem)
	}
	var raw bson.Raw
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if n := raw.Lookup("metrics", "commands", "find", "total").AsInt64(); n != 10 {
		t.Fatalf("metrics.commands.find.total %d, want 10", n)
	}
	if n := raw.Lookup("metrics", "commands", "insert", "failed").AsInt64(); n != 1 {
		t.Fatalf("metrics.commands.insert.failed %d, want 1", n)
	}
	if after.GlobalLock.TotalTime <= 0 || after.Connections.Current < 1 || after.Uptime < 0 {
		t.Fatalf("globalLock %+v connections %+v", after.GlobalLock, after.Connections)
	}
}

func TestTopForMongotop(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	db := c.Database("mon")
	seedMonitored(t, db, 50)
	for range 5 {
		if _, err := db.Collection("events").CountDocuments(ctxT(t), bson.D{}); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, db.RunCommand(ctxT(t), bson.D{{Key: "top", Value: 1}}).Err(), 13, "admin")
	var raw bson.Raw
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "top", Value: 1}}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	// mongotop skips "note" and decodes every other entry.
	type field struct{ Time, Count int }
	type nsInfo struct {
		Total field `bson:"total"`
		Read  field `bson:"readLock"`
		Write field `bson:"writeLock"`
	}
	elems, err := raw.Lookup("totals").Document().Elements()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]nsInfo{}
	for _, e := range elems {
		if e.Key() == "note" {
			continue
		}
		var info nsInfo
		if err := bson.Unmarshal(e.Value().Document(), &info); err != nil {
			t.Fatalf("%s: %v", e.Key(), err)
		}
		got[e.Key()] = info
	}
	ev := got["mon.events"]
	if ev.Write.Count < 2 || ev.Read.Count < 5 || ev.Total.Count != ev.Read.Count+ev.Write.Count || ev.Total.Time <= 0 {
		t.Fatalf("top for mon.events: %+v (all %v)", ev, got)
	}
}

func TestHostInfoAndGetLog(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	admin := c.Database("admin")
	hi := runCmd(t, admin, bson.D{{Key: "hostInfo", Value: 1}})
	osDoc := field(t, hi, "os").(bson.D)
	if field(t, osDoc, "type") != "Linux" || field(t, osDoc, "name") == "" {
		t.Fatalf("hostInfo.os %v", osDoc)
	}
	log := runCmd(t, admin, bson.D{{Key: "getLog", Value: "global"}})
	lines := field(t, log, "log").(bson.A)
	if len(lines) == 0 || toInt64(field(t, log, "totalLinesWritten")) < int64(len(lines)) {
		t.Fatalf("getLog global: %v", log)
	}
	found := false
	for _, l := range lines {
		if strings.Contains(l.(string), `"msg":"mayfly listening"`) && strings.Contains(l.(string), `"s":"I"`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("getLog lacks the start line: %v", lines)
	}
}

func TestFsyncLockHoldsWrites(t *testing.T) {
	s := startServer(t, app.Config{DataDir: t.TempDir()})
	c := connect(t, s)
	admin := c.Database("admin")
	coll := c.Database("d").Collection("c")
	wantCode(t, admin.RunCommand(ctxT(t), bson.D{{Key: "fsyncUnlock", Value: 1}}).Err(), 20, "not locked")
	locked := runCmd(t, admin, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}})
	if toInt64(field(t, locked, "lockCount")) != 1 {
		t.Fatalf("fsync lock: %v", locked)
	}
	var wg sync.WaitGroup
	var done time.Time
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Error(err)
		}
		done = time.Now()
	}()
	time.Sleep(300 * time.Millisecond)
	if err := coll.FindOne(ctxT(t), bson.D{}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("reads go on while locked, and the write has waited: %v", err)
	}
	st := serverStatus(t, c)
	if st.GlobalLock.CurrentQueue.Writers != 1 {
		t.Fatalf("the waiting insert shows in globalLock.currentQueue: %+v", st.GlobalLock.CurrentQueue)
	}
	unlockedAt := time.Now()
	un := runCmd(t, admin, bson.D{{Key: "fsyncUnlock", Value: 1}})
	if toInt64(field(t, un, "lockCount")) != 0 {
		t.Fatalf("fsyncUnlock: %v", un)
	}
	wg.Wait()
	if done.Before(unlockedAt) {
		t.Fatal("the insert finished before fsyncUnlock")
	}
	if n, _ := coll.CountDocuments(ctxT(t), bson.D{}); n != 1 {
		t.Fatalf("the insert landed after unlock: %d", n)
	}
	wantCode(t, c.Database("d").RunCommand(ctxT(t), bson.D{{Key: "fsync", Value: 1}}).Err(), 13, "admin")
}
