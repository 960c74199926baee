package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// migrationShardArgs run a shard with fail points and a one-second
// orphanCleanupDelaySecs, so that a test sees its range deletions.
var migrationShardArgs = []string{"--shardsvr", "--setParameter", "enableTestCommands=1",
	"--setParameter", "orphanCleanupDelaySecs=1"}

// startMigrationCluster is a config set, shards shA and shB added, the
// database test on them, and the balancer off until a test turns it on.
func startMigrationCluster(t *testing.T) *routedCluster {
	t.Helper()
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, 1, migrationShardArgs...)
	}
	c.router = startRouter(t, "cfg/"+c.config.addrs[0])
	admin := c.client().Database("admin")
	runCmd(t, admin, bson.D{{Key: "balancerStop", Value: 1}})
	for _, name := range shardNames() {
		runCmd(t, admin, bson.D{{Key: "addShard", Value: name + "/" + c.shards[name].addrs[0]}})
	}
	runCmd(t, admin, bson.D{{Key: "enableSharding", Value: "test"}})
	return c
}

// shardHashed shards test.<name> on a hashed _id and inserts n documents.
func shardHashed(t *testing.T, cl *mongo.Client, name string, n int) *mongo.Collection {
	t.Helper()
	runCmd(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "test." + name},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	coll := cl.Database("test").Collection(name)
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: int32(i % 13)}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	return coll
}

func TestMigrations(t *testing.T) {
	c := startMigrationCluster(t)
	cl := c.client()
	t.Run("MoveChunkUnderLoad", func(t *testing.T) { testMoveChunkUnderLoad(t, c, cl) })
	t.Run("MoveRangeAndSplit", func(t *testing.T) { testMoveRangeAndSplit(t, cl) })
	t.Run("Refusals", func(t *testing.T) { testMigrationRefusals(t, cl) })
	t.Run("RetryHistoryMoves", func(t *testing.T) { testRetryHistoryMoves(t, c) })
	t.Run("ExpiryDuringMove", func(t *testing.T) { testExpiryDuringMove(t, c, cl) })
	t.Run("KillDonorAtEachPhase", func(t *testing.T) { testKillDonorAtEachPhase(t, c, cl) })
	t.Run("KillShardMidDocumentMove", func(t *testing.T) { testKillShardMidDocumentMove(t, c, cl) })
	t.Run("BalancerSpreadsOntoNewShard", func(t *testing.T) { testBalancerSpreads(t, c, cl) })
}

// chunks reads a collection's chunks from the config servers, in key
// order.
func chunks(t *testing.T, cl *mongo.Client, ns string) []shardmeta.Chunk {
	t.Helper()
	var coll shardmeta.Collection
	if err := cl.Database("config").Collection("collections").FindOne(ctxT(t), bson.D{{Key: "_id", Value: ns}}).Decode(&coll); err != nil {
		t.Fatalf("config.collections %s: %v", ns, err)
	}
	cur, err := cl.Database("config").Collection("chunks").Find(ctxT(t), bson.D{{Key: "uuid", Value: coll.UUID}},
		options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []shardmeta.Chunk
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// chunkOf is the chunk holding document id's hashed _id.
func chunkOf(t *testing.T, cl *mongo.Client, ns string, id int32) shardmeta.Chunk {
	t.Helper()
	h := hashOfInt(t, id)
	for _, ch := range chunks(t, cl, ns) {
		if (migrate.Range{Min: ch.Min, Max: ch.Max}).Contains(bson.D{{Key: "_id", Value: h}}) {
			return ch
		}
	}
	t.Fatalf("no chunk of %s holds _id %d", ns, id)
	return shardmeta.Chunk{}
}

// readOnce reads every _id through the router and fails on a repeat.
func readOnce(t *testing.T, coll *mongo.Collection) map[int32]bool {
	t.Helper()
	cur, err := coll.Find(ctxT(t), bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	for cur.Next(ctxT(t)) {
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			t.Fatalf("_id %d read twice through the router", id)
		}
		seen[id] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return seen
}

// loadDuring writes and reads through the router until stop is closed:
// inserts of new ids (acknowledged ones recorded) and full scans that
// must never see an _id twice, nor count more than they read.
type loadDuring struct {
	mu    sync.Mutex
	acked []int32
	scans int
	err   error
}

func runLoad(ctx context.Context, coll *mongo.Collection, firstID int32, stop <-chan struct{}) *loadDuring {
	l := &loadDuring{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for id := firstID; id < firstID+2000; id++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "v", Value: int32(1)}}); err == nil {
				l.mu.Lock()
				l.acked = append(l.acked, id)
				l.mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.scanOnce(ctx, coll); err != nil {
				l.mu.Lock()
				l.err = errors.Join(l.err, err)
				l.mu.Unlock()
				return
			}
		}
	}()
	go func() { <-stop; wg.Wait() }()
	return l
}

var errDuplicate = errors.New("an _id came back twice in one scan")

func (l *loadDuring) scanOnce(ctx context.Context, coll *mongo.Collection) error {
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil // a failed read is not a wrong read
	}
	seen := map[int32]bool{}
	for cur.Next(ctx) {
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			return errDuplicate
		}
		seen[id] = true
	}
	l.mu.Lock()
	l.scans++
	l.mu.Unlock()
	return nil
}

// testMoveChunkUnderLoad: a chunk moves while documents are inserted
// and scanned through the router; no scan sees an _id twice, every
// acknowledged insert is read back once, the chunk is the recipient's
// with a higher version, and the donor's copy is deleted.
func testMoveChunkUnderLoad(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := shardHashed(t, cl, "mv", 600)
	before := chunkOf(t, cl, "test.mv", 0)
	to := otherShard(before.Shard)
	stop := make(chan struct{})
	load := runLoad(context.Background(), coll, 100000, stop)
	time.Sleep(300 * time.Millisecond)
	reply := runCmd(t, cl.Database("admin"), bson.D{{Key: "moveChunk", Value: "test.mv"},
		{Key: "find", Value: bson.D{{Key: "_id", Value: int32(0)}}}, {Key: "to", Value: to}})
	if _, ok := field(t, reply, "millis").(int32); !ok {
		t.Fatalf("moveChunk reply %v: want millis", reply)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	time.Sleep(100 * time.Millisecond)
	load.mu.Lock()
	acked, scans, loadErr := slices.Clone(load.acked), load.scans, load.err
	load.mu.Unlock()
	if loadErr != nil || scans == 0 || len(acked) == 0 {
		t.Fatalf("load during the move: %d scans, %d inserts, %v", scans, len(acked), loadErr)
	}
	after := chunkOf(t, cl, "test.mv", 0)
	if after.Shard != to || after.Lastmod.T <= before.Lastmod.T {
		t.Fatalf("after the move the chunk is %s at %v, before %s at %v", after.Shard, after.Lastmod, before.Shard, before.Lastmod)
	}
	checkVersionsRise(t, chunks(t, cl, "test.mv"), before.Lastmod)
	seen := readOnce(t, coll)
	for i := range int32(600) {
		if !seen[i] {
			t.Fatalf("_id %d lost by the move", i)
		}
	}
	for _, id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged insert %d lost by the move", id)
		}
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || int(n) != len(seen) {
		t.Fatalf("count through the router %d (%v), distinct ids %d", n, err, len(seen))
	}
	waitStoredTotal(t, c, "mv", int64(len(seen)))
}

// checkVersionsRise: the collection's highest version is above what it
// was, and no two chunks share a version.
func checkVersionsRise(t *testing.T, cs []shardmeta.Chunk, was bson.Timestamp) {
	t.Helper()
	seen := map[bson.Timestamp]bool{}
	var top bson.Timestamp
	for _, ch := range cs {
		if seen[ch.Lastmod] {
			t.Fatalf("two chunks at version %v: %v", ch.Lastmod, cs)
		}
		seen[ch.Lastmod] = true
		if ch.Lastmod.T > top.T || ch.Lastmod.T == top.T && ch.Lastmod.I > top.I {
			top = ch.Lastmod
		}
	}
	if top.T <= was.T {
		t.Fatalf("collection version %v is not above %v", top, was)
	}
}

// waitStoredTotal waits until the shards store exactly want documents
// of test.<coll> between them: the donors' range deletions are done and
// no orphan is left.
func waitStoredTotal(t *testing.T, c *routedCluster, coll string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got map[string]int64
	for time.Now().Before(deadline) {
		got = map[string]int64{}
		var total int64
		for name := range c.shards {
			n, err := c.shardColl(name, "test", coll).CountDocuments(ctxT(t), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			got[name] = n
			total += n
		}
		if total == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the shards store %v documents of test.%s, want %d in all", got, coll, want)
}

func otherShard(s string) string {
	if s == "shA" {
		return "shB"
	}
	return "shA"
}

// testMoveRangeAndSplit: moveRange of part of a chunk splits it and
// moves that part; split at a middle adds a chunk; each reads back once.
func testMoveRangeAndSplit(t *testing.T, cl *mongo.Client) {
	coll := shardHashed(t, cl, "mr", 400)
	ch := chunkOf(t, cl, "test.mr", 1)
	lo, hi := boundInt(ch.Min, -1<<63), boundInt(ch.Max, 1<<63-1)
	mid := lo/2 + hi/2
	runCmd(t, cl.Database("admin"), bson.D{{Key: "moveRange", Value: "test.mr"}, {Key: "toShard", Value: otherShard(ch.Shard)},
		{Key: "min", Value: ch.Min}, {Key: "max", Value: bson.D{{Key: "_id", Value: mid}}}})
	cs := chunks(t, cl, "test.mr")
	if len(cs) != 3 {
		t.Fatalf("after moveRange of half a chunk: %d chunks, want 3: %v", len(cs), cs)
	}
	checkVersionsRise(t, cs, ch.Lastmod)
	runCmd(t, cl.Database("admin"), bson.D{{Key: "split", Value: "test.mr"}, {Key: "middle", Value: bson.D{{Key: "_id", Value: mid / 2}}}})
	if got := len(chunks(t, cl, "test.mr")); got != 4 {
		t.Fatalf("after split: %d chunks, want 4", got)
	}
	runCmd(t, cl.Database("admin"), bson.D{{Key: "split", Value: "test.mr"}, {Key: "find", Value: bson.D{{Key: "_id", Value: int32(7)}}}})
	if got := len(chunks(t, cl, "test.mr")); got != 5 {
		t.Fatalf("after split by find: %d chunks, want 5", got)
	}
	if seen := readOnce(t, coll); len(seen) != 400 {
		t.Fatalf("read %d documents back, want 400", len(seen))
	}
}

func boundInt(d bson.D, end int64) int64 {
	if n, ok := d[0].Value.(int64); ok {
		return n
	}
	return end
}

// testMigrationRefusals: the router's chunk commands refuse what mongos
// refuses.
func testMigrationRefusals(t *testing.T, cl *mongo.Client) {
	admin := cl.Database("admin")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "moveChunk", Value: "test.mr"}, {Key: "to", Value: "shA"}}), 72, "either a find query")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "moveChunk", Value: "test.mr"}, {Key: "find", Value: bson.D{{Key: "_id", Value: 1}}}}), 40414, "to")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "moveChunk", Value: "test.mr"}, {Key: "find", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "to", Value: "nosuch"}}), 70, "does not exist")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "moveChunk", Value: "test.unsharded"}, {Key: "find", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "to", Value: "shA"}}), 118, "not sharded")
	wantCode(t, cmdErrOf(admin, bson.D{{Key: "moveChunk", Value: "test.mr"}, {Key: "bounds", Value: bson.A{
		bson.D{{Key: "_id", Value: int64(1)}}, bson.D{{Key: "_id", Value: int64(2)}}}}, {Key: "to", Value: "shA"}}), 72, "no chunk found")
	wantCode(t, cmdErrOf(cl.Database("test"), bson.D{{Key: "moveChunk", Value: "test.mr"}, {Key: "find", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "to", Value: "shA"}}), 13, "admin")
}

func hashOfInt(t *testing.T, id int32) int64 {
	t.Helper()
	h, err := shardkey.Hash(id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// setShardParameter sets a server parameter on a shard's member.
func setShardParameter(t *testing.T, c *routedCluster, shard, name string, v any) {
	t.Helper()
	runCmd(t, c.shardColl(shard, "admin", "x").Database(), bson.D{{Key: "setParameter", Value: 1}, {Key: name, Value: v}})
}

// failPoint switches a migration fail point on a shard's member.
func failPoint(t *testing.T, c *routedCluster, shard, name string, on bool) {
	t.Helper()
	mode := "off"
	if on {
		mode = "alwaysOn"
	}
	runCmd(t, c.shardColl(shard, "admin", "x").Database(), bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: mode}})
}

// shardStoredCount is what a shard's member stores of test.<coll>, expired
// documents not yet deleted included (collStats' count).
func shardStoredCount(t *testing.T, c *routedCluster, shard, coll string) int64 {
	t.Helper()
	reply := runCmd(t, c.shardColl(shard, "test", coll).Database(), bson.D{{Key: "collStats", Value: coll}})
	switch n := field(t, reply, "count").(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	}
	t.Fatalf("collStats count: %v", reply)
	return 0
}

// waitPhase waits until a shard's member records a migration in phase.
func waitPhase(t *testing.T, c *routedCluster, shard string, phase migrate.Phase) {
	t.Helper()
	coord := c.shardColl(shard, "config", "migrationCoordinators")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := coord.CountDocuments(ctxT(t), bson.D{{Key: "phase", Value: string(phase)}}); err == nil && n == 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("shard %s recorded no migration in phase %s", shard, phase)
}

// moveAsync runs moveChunk of _id 0's chunk in the background; its
// error arrives on the channel.
func moveAsync(cl *mongo.Client, ns, to string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		done <- cl.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns},
			{Key: "find", Value: bson.D{{Key: "_id", Value: int32(0)}}}, {Key: "to", Value: to}}).Err()
	}()
	return done
}

// testExpiryDuringMove: documents of a moving chunk that were expired at
// clone time are never copied, those that expire while it moves are
// deleted on the donor and that deletion reaches the recipient, and no
// read through the router returns an expired document at any time. The
// recipient's TTL monitor is off throughout, so whatever it stores was
// put there by the migration.
func testExpiryDuringMove(t *testing.T, c *routedCluster, cl *mongo.Client) {
	admin := cl.Database("admin")
	runCmd(t, admin, bson.D{{Key: "shardCollection", Value: "test.ex"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	coll := cl.Database("test").Collection("ex")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	before := chunkOf(t, cl, "test.ex", 0)
	donor, recipient := before.Shard, otherShard(before.Shard)
	for _, s := range shardNames() {
		setShardParameter(t, c, s, "ttlMonitorEnabled", false)
	}
	defer setShardParameter(t, c, recipient, "ttlMonitorEnabled", true)
	now := time.Now()
	docs := make([]any, 300)
	var soonIDs bson.A
	for i := range docs {
		at := now.Add(time.Hour) // group L: live; group E1 until the move holds
		switch i % 3 {
		case 0:
			at = now.Add(-time.Minute) // group E0: expired before the move
		case 1:
			soonIDs = append(soonIDs, int32(i))
		}
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "expireAt", Value: at}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	failPoint(t, c, donor, failpoint.MigrationHangInCatchUp, true)
	moved := moveAsync(cl, "test.ex", recipient)
	waitPhase(t, c, donor, migrate.PhaseCatchUp)
	// Group E1, cloned with a date an hour away, now expires while the
	// move is held in catch-up: the new date reaches the recipient as a
	// catch-up write. Dated from here, however long the set-up took.
	soon := time.Now().Add(3 * time.Second)
	if _, err := coll.UpdateMany(ctxT(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: soonIDs}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "expireAt", Value: soon}}}}); err != nil {
		t.Fatal(err)
	}
	watchUntil(t, coll, soon.Add(1500*time.Millisecond))
	setShardParameter(t, c, donor, "ttlMonitorEnabled", true)
	waitDonorDeleted(t, c, donor, before, 300)
	failPoint(t, c, donor, failpoint.MigrationHangInCatchUp, false)
	if err := <-moved; err != nil {
		t.Fatalf("moveChunk: %v", err)
	}
	want := recipientStoredAfter(t, before, recipient, chunks(t, cl, "test.ex"), 300)
	if got := shardStoredCount(t, c, recipient, "ex"); got != want {
		setShardParameter(t, c, recipient, "mayflyExactExpiry", false)
		cur, _ := c.shardColl(recipient, "test", "ex").Find(ctxT(t), bson.D{})
		var all []bson.D
		_ = cur.All(ctxT(t), &all)
		groups := map[string]int{}
		for _, d := range all {
			id := d[0].Value.(int32)
			groups[fmt.Sprintf("moved=%v g=%d", inChunk(t, before, id), id%3)]++
		}
		t.Logf("recipient holds %v", groups)
		t.Fatalf("the recipient stores %d documents, want %d: an expired document was copied or not deleted", got, want)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 100 {
		t.Fatalf("through the router %d live documents (%v), want 100", n, err)
	}
}

// watchUntil reads through the router until end: no document may come
// back once its expireAt has passed, and some must come back live.
func watchUntil(t *testing.T, coll *mongo.Collection, end time.Time) {
	t.Helper()
	live := false
	for time.Now().Before(end) {
		sent := time.Now().Truncate(time.Millisecond)
		cur, err := coll.Find(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ID       int32     `bson:"_id"`
			ExpireAt time.Time `bson:"expireAt"`
		}
		if err := cur.All(ctxT(t), &got); err != nil {
			t.Fatal(err)
		}
		for _, d := range got {
			if !d.ExpireAt.After(sent) {
				t.Fatalf("read at %v returned _id %d, expired at %v", sent, d.ID, d.ExpireAt)
			}
			live = live || d.ID%3 == 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !live {
		t.Fatal("no read saw a document that was about to expire: the test proved nothing")
	}
}

// inChunk reports whether document id's hash falls in ch.
func inChunk(t *testing.T, ch shardmeta.Chunk, id int32) bool {
	return (migrate.Range{Min: ch.Min, Max: ch.Max}).Contains(bson.D{{Key: "_id", Value: hashOfInt(t, id)}})
}

// waitDonorDeleted waits until the donor's monitor has deleted the
// moving chunk's expired documents (two thirds of them).
func waitDonorDeleted(t *testing.T, c *routedCluster, donor string, moving shardmeta.Chunk, n int32) {
	t.Helper()
	var live int64
	for i := range n {
		if i%3 == 2 && inChunk(t, moving, i) {
			live++
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if shardStoredCount(t, c, donor, "ex") == live {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the donor still stores %d documents, want its %d live ones", shardStoredCount(t, c, donor, "ex"), live)
}

// recipientStoredAfter is what the recipient must store after the move:
// all of its own chunks' documents (its monitor is off), and the moved
// chunk's live ones only.
func recipientStoredAfter(t *testing.T, moved shardmeta.Chunk, recipient string, after []shardmeta.Chunk, n int32) int64 {
	t.Helper()
	var want int64
	for i := range n {
		switch {
		case inChunk(t, moved, i):
			if i%3 == 2 {
				want++
			}
		case ownerOf(t, after, i) == recipient:
			want++
		}
	}
	return want
}

func ownerOf(t *testing.T, cs []shardmeta.Chunk, id int32) string {
	for _, ch := range cs {
		if inChunk(t, ch, id) {
			return ch.Shard
		}
	}
	t.Fatalf("no chunk holds _id %d", id)
	return ""
}

// testKillDonorAtEachPhase: the donor's member is killed with SIGKILL
// while its migration waits at each phase; after its restart the
// migration is recovered (aborted before the commit, finished after), the
// range has one owner, and every document reads back once.
func testKillDonorAtEachPhase(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := shardHashed(t, cl, "k", 300)
	cases := []struct {
		point       string
		phase       migrate.Phase
		toRecipient bool
	}{
		{failpoint.MigrationHangInCatchUp, migrate.PhaseCatchUp, false},
		{failpoint.MigrationHangInCriticalSection, migrate.PhaseCriticalSection, false},
		{failpoint.MigrationHangBeforeCommit, migrate.PhaseCommitStarted, false},
		{failpoint.MigrationHangAfterCommit, migrate.PhaseCommitStarted, true},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			before := chunkOf(t, cl, "test.k", 0)
			donor, recipient := before.Shard, otherShard(before.Shard)
			failPoint(t, c, donor, tc.point, true)
			moved := moveAsync(cl, "test.k", recipient)
			waitPhase(t, c, donor, tc.phase)
			c.shards[donor].kill9(0)
			c.shards[donor].start(0)
			c.shards[donor].waitPrimary(-1, 30*time.Second)
			<-moved
			waitNoMigration(t, c, donor)
			after := chunkOf(t, cl, "test.k", 0)
			want := donor
			if tc.toRecipient {
				want = recipient
			}
			if after.Shard != want || migrate.OwnerOf(chunks(t, cl, "test.k"), migrate.Range{Min: before.Min, Max: before.Max}) != want {
				t.Fatalf("after recovery the range is on %s, want %s", after.Shard, want)
			}
			if seen := readOnce(t, coll); len(seen) != 300 {
				t.Fatalf("read %d documents back, want 300", len(seen))
			}
			waitStoredTotal(t, c, "k", 300)
		})
	}
}

// waitNoMigration waits until a shard's member has finished recovering
// its migration records.
func waitNoMigration(t *testing.T, c *routedCluster, shard string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		n, err := c.shardColl(shard, "config", "migrationCoordinators").CountDocuments(ctxT(t), bson.D{})
		if err == nil && n == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("shard %s did not finish its recorded migration", shard)
}

// testBalancerSpreads: with the balancer on, a collection of 3,000
// documents spreads onto a shard added later within a minute, and
// removeShard drains it again through the balancer.
func testBalancerSpreads(t *testing.T, c *routedCluster, cl *mongo.Client) {
	db := cl.Database("test")
	for _, name := range []string{"mv", "mr", "ex", "k"} {
		if err := db.Collection(name).Drop(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	coll := shardHashed(t, cl, "bal", 3000)
	createIndexes(t, coll, bson.D{{Key: "v", Value: 1}}, bson.D{{Key: "at", Value: 1}})
	admin := cl.Database("admin")
	c.shards["shC"] = startNamedReplSet(t, "shC", 1, migrationShardArgs...)
	runCmd(t, admin, bson.D{{Key: "balancerStart", Value: 1}})
	added := time.Now()
	runCmd(t, admin, bson.D{{Key: "addShard", Value: "shC/" + c.shards["shC"].addrs[0]}})
	waitChunksOn(t, cl, "test.bal", func(per map[string]int) bool {
		return per["shA"] > 0 && per["shB"] > 0 && per["shC"] > 0
	})
	t.Logf("test.bal reached the new shard %v after addShard", time.Since(added).Round(time.Millisecond))
	checkRecipientIndexes(t, c, coll)
	if seen := readOnce(t, coll); len(seen) != 3000 {
		t.Fatalf("read %d documents back, want 3000", len(seen))
	}
	status := runCmd(t, admin, bson.D{{Key: "balancerStatus", Value: 1}})
	if field(t, status, "mode") != "full" || field(t, status, "numBalancerRounds").(int64) < 1 {
		t.Fatalf("balancerStatus %v", status)
	}
	if reply := runCmd(t, admin, bson.D{{Key: "removeShard", Value: "shC"}}); field(t, reply, "state") != "started" {
		t.Fatalf("removeShard: %v", reply)
	}
	waitRemoved(t, admin, "shC")
	if per := chunkCounts(t, cl, "test.bal"); per["shC"] != 0 {
		t.Fatalf("after removeShard shC still owns chunks: %v", per)
	}
	if seen := readOnce(t, coll); len(seen) != 3000 {
		t.Fatalf("after draining read %d documents back, want 3000", len(seen))
	}
	runCmd(t, admin, bson.D{{Key: "balancerStop", Value: 1}})
	if status := runCmd(t, admin, bson.D{{Key: "balancerStatus", Value: 1}}); field(t, status, "mode") != "off" {
		t.Fatalf("balancerStatus after balancerStop: %v", status)
	}
}

// createIndexes creates, through the router, an index on each key; an
// index on "at" is a TTL index of one second.
func createIndexes(t *testing.T, coll *mongo.Collection, keys ...bson.D) {
	t.Helper()
	for _, key := range keys {
		opts := options.Index()
		if key[0].Key == "at" {
			opts.SetExpireAfterSeconds(1)
		}
		if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: key, Options: opts}); err != nil {
			t.Fatalf("create index %v: %v", key, err)
		}
	}
}

// checkRecipientIndexes: a shard added after a collection's indexes were
// created holds them once it received a chunk, as the shards that took
// part do, and its TTL monitor deletes what expires in its chunks.
func checkRecipientIndexes(t *testing.T, c *routedCluster, coll *mongo.Collection) {
	t.Helper()
	want := indexSpecs(ctxT(t), t, c.shardColl("shA", "test", coll.Name()))
	if got := indexSpecs(ctxT(t), t, c.shardColl("shC", "test", coll.Name())); got != want {
		t.Fatalf("indexes of %s on the added shard: %v, want the first shard's %v", coll.Name(), got, want)
	}
	shC := c.shardColl("shC", "admin", "x").Database().Client()
	before := statusMetric(t, shC, "ttl", "deletedDocuments")
	docs := make([]any, 300)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(10_000 + i)}, {Key: "at", Value: time.Now()}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for statusMetric(t, shC, "ttl", "deletedDocuments") == before {
		if time.Now().After(deadline) {
			t.Fatal("the added shard's TTL monitor deleted none of 300 expiring documents in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "at", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil || n != 0 {
		t.Fatalf("%d expired documents counted through the router (%v)", n, err)
	}
}

func chunkCounts(t *testing.T, cl *mongo.Client, ns string) map[string]int {
	per := map[string]int{}
	for _, ch := range chunks(t, cl, ns) {
		per[ch.Shard]++
	}
	return per
}

// waitChunksOn waits, at most a minute, until the chunk counts satisfy ok.
func waitChunksOn(t *testing.T, cl *mongo.Client, ns string, ok func(map[string]int) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var per map[string]int
	for time.Now().Before(deadline) {
		if per = chunkCounts(t, cl, ns); ok(per) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("chunks of %s per shard after a minute: %v", ns, per)
}

// waitRemoved calls removeShard until it answers completed, at most a
// minute.
func waitRemoved(t *testing.T, admin *mongo.Database, shard string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var reply bson.D
	for time.Now().Before(deadline) {
		reply = runCmd(t, admin, bson.D{{Key: "removeShard", Value: shard}})
		if field(t, reply, "state") == "completed" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("removeShard %s after a minute: %v", shard, reply)
}
