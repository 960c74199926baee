package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/failpoint"
)

// indexBuildDocs is the collection a held build reads: far more than its
// first batch, so that most documents are still unread while it is held.
const indexBuildDocs = 20000

// TestReplicaSetIndexBuildBesideWrites holds an index build on a
// three-member set's primary after its first batch (mongod's fail point
// hangIndexBuildDuringCollectionScanPhaseAfterInsertion) and meanwhile
// writes to the collection, inserts documents that expire, and asks for
// the same index again. The writes finish and the expired documents are deleted
// while the build is held (a build held the collection's lock
// throughout, and stopped both, before); the second request waits for
// the first. Once released, the index is complete on every member:
// validate compares each member's indexes with its documents, and a scan
// of the new index finds what a collection scan finds.
func TestReplicaSetIndexBuildBesideWrites(t *testing.T) {
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	p := rs.waitPrimary(-1, 20*time.Second)
	primary := rs.direct(p)
	coll := primary.Database("ib").Collection("c")
	ctx := context.Background()
	loadIndexBuildDocs(t, coll)

	hold := holdIndexBuilds(t, primary)
	build := startIndexBuild(coll, "k_1", bson.D{{Key: "k", Value: 1}})
	hold.waitEntered()
	waitSameBuildUUID(t, rs, "k_1")
	expireAt := insertExpiring(t, coll, 2000)
	writeDuringBuild(t, coll)
	// The 2,000 expire; one inserted, three deleted.
	waitStoredDuringBuild(t, coll, expireAt, indexBuildDocs+1-3)
	again := startIndexBuild(coll, "k_1", bson.D{{Key: "k", Value: 1}})
	select {
	case err := <-again:
		t.Fatalf("a second request for the index returned while the build was held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	hold.release()
	if err := <-build; err != nil {
		t.Fatalf("the held build: %v", err)
	}
	if err := <-again; err != nil {
		t.Fatalf("the second request: %v", err)
	}
	hash := rs.waitSameHash("ib", 20*time.Second)
	for i := range rs.addrs {
		member := rs.direct(i).Database("ib")
		validateDB(ctx, t, member)
		requireIndexAgrees(t, member.Collection("c"), "k_1", "k")
	}
	t.Logf("every member valid after the build, dbHash %s", hash)
}

// TestReplicaSetIndexBuildAbortedByDropIndexes: dropIndexes of an index
// being built stops its build, which answers IndexBuildAborted, as
// mongod's does, and leaves no trace of it on any member.
func TestReplicaSetIndexBuildAbortedByDropIndexes(t *testing.T) {
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	p := rs.waitPrimary(-1, 20*time.Second)
	primary := rs.direct(p)
	coll := primary.Database("ib").Collection("c")
	loadIndexBuildDocs(t, coll)

	hold := holdIndexBuilds(t, primary)
	build := startIndexBuild(coll, "u_1", bson.D{{Key: "u", Value: 1}})
	hold.waitEntered()
	mustDo(t, func() error {
		return coll.Database().RunCommand(context.Background(), bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "u_1"}}).Err()
	})
	hold.release()
	wantCode(t, <-build, 276, "Index build aborted")
	rs.waitSameHash("ib", 20*time.Second)
	for i := range rs.addrs {
		member := rs.direct(i).Database("ib")
		validateDB(context.Background(), t, member)
		if specs := indexSpecs(context.Background(), t, member.Collection("c")); strings.Contains(specs, "u_1") {
			t.Fatalf("member %d lists %s after the aborted build", i, specs)
		}
	}
}

// loadIndexBuildDocs inserts indexBuildDocs documents that expire in an
// hour, with their TTL index.
func loadIndexBuildDocs(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	ctx := context.Background()
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	for b := 0; b < indexBuildDocs; b += 1000 {
		batch := make([]any, 0, 1000)
		for i := b; i < b+1000; i++ {
			batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 100}, {Key: "u", Value: i}, {Key: "at", Value: later}})
		}
		if _, err := coll.InsertMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
}

// insertExpiring inserts n documents that expire in a second, and
// returns when.
func insertExpiring(t *testing.T, coll *mongo.Collection, n int) time.Time {
	t.Helper()
	at := time.Now().Add(time.Second)
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: fmt.Sprintf("e%d", i)}, {Key: "k", Value: i % 100}, {Key: "at", Value: at}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert during the held build: %v", err)
	}
	return at
}

// buildHold is the index build fail point of a server.
type buildHold struct {
	t      *testing.T
	admin  *mongo.Database
	before int64
	gone   bool // the server was killed: nothing to release
}

func holdIndexBuilds(t *testing.T, c *mongo.Client) *buildHold {
	t.Helper()
	h := &buildHold{t: t, admin: c.Database("admin")}
	h.before = h.configure("alwaysOn")
	t.Cleanup(h.release)
	return h
}

// configure sets the point's mode and returns its entries so far.
func (h *buildHold) configure(mode string) int64 {
	var res struct {
		Count int64 `bson:"count"`
	}
	err := h.admin.RunCommand(context.Background(), bson.D{
		{Key: "configureFailPoint", Value: failpoint.IndexBuildHangAfterInsertion}, {Key: "mode", Value: mode}}).Decode(&res)
	if err != nil {
		h.t.Fatalf("configureFailPoint %s: %v", mode, err)
	}
	return res.Count
}

// waitEntered waits until a build is held at the point.
func (h *buildHold) waitEntered() {
	deadline := time.Now().Add(20 * time.Second)
	for h.configure("alwaysOn") == h.before {
		if time.Now().After(deadline) {
			h.t.Fatal("no index build reached the fail point in 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *buildHold) release() {
	if !h.gone {
		h.configure("off")
	}
}

// startIndexBuild runs createIndexes in the background.
func startIndexBuild(coll *mongo.Collection, name string, key bson.D) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- coll.Database().RunCommand(context.Background(), bson.D{
			{Key: "createIndexes", Value: coll.Name()},
			{Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: key}, {Key: "name", Value: name}}}}}).Err()
	}()
	return done
}

// writeDuringBuild makes each kind of write a client sends, to documents
// the held build has read (_id below 128) and has not, each with a
// deadline the held build would exceed if it held them.
func writeDuringBuild(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	majority := coll.Database().Collection(coll.Name(), options.Collection().SetWriteConcern(writeconcern.Majority()))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	writes := map[string]func() error{
		"insert": func() error {
			_, err := majority.InsertOne(ctx, bson.D{{Key: "_id", Value: "new"}, {Key: "k", Value: 7}, {Key: "at", Value: time.Now().Add(time.Hour)}})
			return err
		},
		"update": func() error {
			_, err := majority.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{5, 500, 5000}}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: 1000}}}})
			return err
		},
		"delete": func() error {
			_, err := majority.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{6, 600, 6000}}}}})
			return err
		},
		"findAndModify": func() error {
			return majority.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 700}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: 1001}}}}).Err()
		},
		"replace": func() error {
			_, err := majority.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 7}}, bson.D{{Key: "k", Value: 1002}, {Key: "at", Value: time.Now().Add(time.Hour)}})
			return err
		},
	}
	var wg sync.WaitGroup
	for name, write := range writes {
		wg.Go(func() {
			if err := write(); err != nil {
				t.Errorf("%s during the held build: %v", name, err)
			}
		})
	}
	wg.Wait()
}

// waitStoredDuringBuild waits until the collection stores want documents: the
// expiring ones deleted by the monitor while the build is held.
func waitStoredDuringBuild(t *testing.T, coll *mongo.Collection, expireAt time.Time, want int64) {
	t.Helper()
	deadline := expireAt.Add(10 * time.Second)
	for {
		n := storedDocs(t, coll)
		if n == want {
			t.Logf("the expired documents deleted %v after their expiry, the build held", time.Since(expireAt).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d documents stored 10 s after the expiry, want %d: expiry waited for the build", n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireIndexAgrees compares, for some values of field, what a scan of
// the index finds with what a collection scan finds.
func requireIndexAgrees(t *testing.T, coll *mongo.Collection, index, field string) {
	t.Helper()
	ctx := context.Background()
	for _, v := range []int{0, 1, 5, 7, 50, 99, 1000, 1001, 1002} {
		f := bson.D{{Key: field, Value: v}}
		byIndex, err := coll.CountDocuments(ctx, f, options.Count().SetHint(index))
		if err != nil {
			t.Fatal(err)
		}
		byScan, err := coll.CountDocuments(ctx, f, options.Count().SetHint(bson.D{{Key: "$natural", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if byIndex != byScan {
			t.Fatalf("%s = %d: %d through %s, %d by a collection scan", field, v, byIndex, index, byScan)
		}
	}
}

// TestIndexBuildKilledMidway kills a server with kill -9 while a build is
// held and writes have gone on beside it (their entries in the index
// being built are on disk): the restarted server drops the unfinished
// index with every entry, validate finds the collection valid, and the
// index builds again.
func TestIndexBuildKilledMidway(t *testing.T) {
	bin, dir, addr := buildBinary(t), t.TempDir(), freePort(t)
	p, err := startMayfly(t, bin, dir, addr, "--setParameter", "enableTestCommands=1")
	if err != nil {
		t.Fatal(err)
	}
	cl := quickClient(t, addr, 10*time.Second)
	coll := cl.Database("ib").Collection("c")
	loadIndexBuildDocs(t, coll)
	hold := holdIndexBuilds(t, cl)
	startIndexBuild(coll, "k_1", bson.D{{Key: "k", Value: 1}}) // killed, it never answers
	hold.waitEntered()
	writeDuringBuild(t, coll)
	p.kill9()
	hold.gone = true

	p, err = startMayfly(t, bin, dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	coll = p.client(t).Database("ib").Collection("c")
	if specs := indexSpecs(context.Background(), t, coll); strings.Contains(specs, "k_1") {
		t.Fatalf("the unfinished index survived the restart: %s", specs)
	}
	validateDB(context.Background(), t, coll.Database())
	if err := <-startIndexBuild(coll, "k_1", bson.D{{Key: "k", Value: 1}}); err != nil {
		t.Fatalf("the build after the restart: %v", err)
	}
	validateDB(context.Background(), t, coll.Database())
	requireIndexAgrees(t, coll, "k_1", "k")
}

// waitSameBuildUUID waits until every member lists index (of ib.c) as
// being built, with one build UUID, as mongod's members list a build
// that its oplog entry started on each.
func waitSameBuildUUID(t *testing.T, rs *replSet, index string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen := map[string]int{}
		for i := range rs.addrs {
			for _, d := range listIndexes(t, rs.direct(i).Database("ib"), bson.E{Key: "includeBuildUUIDs", Value: true}) {
				if name, _ := d.Lookup("spec", "name").StringValueOK(); name == index {
					seen[buildUUIDOf(t, d, "buildUUID")]++
				}
			}
		}
		if len(seen) == 1 && slices.Collect(maps.Values(seen))[0] == len(rs.addrs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("members list %s's build as %v after 10 s, want one UUID on %d members", index, seen, len(rs.addrs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
