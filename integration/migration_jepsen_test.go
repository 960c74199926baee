package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// jepsenSize is how long and how hard TestMigrationJepsen runs: the CI
// size by default, the long one through MAYFLY_MIGRATION_SECONDS and
// MAYFLY_MIGRATION_FAULTS (three-member shards once the run is long).
type jepsenSize struct {
	run     time.Duration
	faults  int
	members int
	seed    uint64
}

func jepsenSizeFromEnv(t *testing.T) jepsenSize {
	// The CI size takes every kind of fault once.
	s := jepsenSize{run: 40 * time.Second, faults: len(jepsenFaults()), members: 1, seed: uint64(time.Now().UnixNano())}
	if v := os.Getenv("MAYFLY_MIGRATION_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("MAYFLY_MIGRATION_SECONDS=%q: want a number of seconds, at least 10", v)
		}
		s.run = time.Duration(n) * time.Second
	}
	if v := os.Getenv("MAYFLY_MIGRATION_FAULTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("MAYFLY_MIGRATION_FAULTS=%q: want a count", v)
		}
		s.faults = n
	}
	if v := os.Getenv("MAYFLY_MIGRATION_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("MAYFLY_MIGRATION_SEED=%q: %v", v, err)
		}
		s.seed = n
	}
	if s.run >= 5*time.Minute {
		s.members = 3
	}
	return s
}

// jepsenCluster is a config set, shards shA and shB and one router whose
// process the nemesis kills and restarts on the same address.
type jepsenCluster struct {
	t         *testing.T
	config    *replSet
	shards    map[string]*replSet
	router    *process
	routerLog string
	configDB  string
	admins    map[string]*mongo.Client // each set by its seed list, for fail points and records
}

func startJepsenCluster(t *testing.T, members int) *jepsenCluster {
	t.Helper()
	c := &jepsenCluster{t: t, shards: map[string]*replSet{}, admins: map[string]*mongo.Client{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr")
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, members, migrationShardArgs...)
		c.admins[name] = c.shards[name].client(options.Client().SetTimeout(10 * time.Second))
	}
	c.admins["cfg"] = c.config.client(options.Client().SetTimeout(10 * time.Second))
	c.configDB = "cfg/" + c.config.addrs[0]
	c.routerLog = filepath.Join(t.TempDir(), "route.log")
	c.startRouter(freePort(t))
	return c
}

// disconnect closes the test's clients while every process still runs:
// the processes restarted during the test are stopped first at cleanup,
// and a client closed after them waits out its server selection timeout
// to end its sessions.
func (c *jepsenCluster) disconnect(cl *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = cl.Disconnect(ctx)
	for _, admin := range c.admins {
		_ = admin.Disconnect(ctx)
	}
}

func (c *jepsenCluster) startRouter(addr string) {
	c.t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, err := startLogged(c.t, buildBinary(c.t), c.routerLog, addr,
		"route", "--configdb", c.configDB, "--bind_ip", host, "--port", port)
	if err != nil {
		c.t.Fatal(err)
	}
	c.router = p
}

// client connects to the router with majority reads and writes, as the
// checkers need; the driver finds the router again after its restart.
func (c *jepsenCluster) client() *mongo.Client {
	c.t.Helper()
	cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + c.router.addr + "/").
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(20 * time.Second).
		SetWriteConcern(writeconcern.Majority()).SetReadConcern(readconcern.Majority()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { disconnectSoon(cl) })
	return cl
}

// setFailPoint switches a migration fail point on every shard's primary;
// a primary just restarted may refuse for a moment, so it is retried.
// Off goes to every member too: the primary the fault hurt may have set
// it on and lost its primacy since, and it would hold its next donation
// at the phase, its shard busy, if it became primary again.
func (c *jepsenCluster) setFailPoint(name string, on bool) {
	mode := "off"
	if on {
		mode = "alwaysOn"
	}
	cmd := bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: mode}}
	for _, shard := range shardNames() {
		if err := retryFor(20*time.Second, func() error {
			return c.admins[shard].Database("admin").RunCommand(context.Background(), cmd).Err()
		}); err != nil {
			c.t.Fatalf("configureFailPoint %s %s on %s: %v", name, mode, shard, err)
		}
		if !on {
			c.offOnEveryMember(shard, cmd)
		}
	}
}

// offOnEveryMember sends cmd to each member of shard directly.
func (c *jepsenCluster) offOnEveryMember(shard string, cmd bson.D) {
	rs := c.shards[shard]
	for i := range rs.addrs {
		member := rs.direct(i)
		err := retryFor(20*time.Second, func() error {
			return member.Database("admin").RunCommand(context.Background(), cmd).Err()
		})
		_ = member.Disconnect(context.Background())
		if err != nil {
			c.t.Fatalf("configureFailPoint %v on %s member %d: %v", cmd[0].Value, shard, i, err)
		}
	}
}

func retryFor(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// donorAt waits until a shard records a migration in phase and returns
// that shard (the donor) and the migration's recipient; ok is false when
// none got there in time.
func (c *jepsenCluster) donorAt(phase migrate.Phase, within time.Duration) (donor, recipient string, ok bool) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, shard := range shardNames() {
			var rec migrate.Coordinator
			err := c.admins[shard].Database(migrate.RecordDB).Collection(migrate.CoordinatorsColl).
				FindOne(context.Background(), bson.D{{Key: "phase", Value: string(phase)}}).Decode(&rec)
			if err == nil {
				return rec.Donor, rec.Recipient, true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", "", false
}

// restartPrimary kills a set's primary with SIGKILL and starts it again
// with extra flags.
func restartPrimary(rs *replSet, extra ...string) {
	p := rs.waitPrimary(-1, 60*time.Second)
	rs.kill9(p)
	time.Sleep(300 * time.Millisecond)
	rs.start(p, extra...)
	rs.waitPrimary(-1, 60*time.Second)
}

// pausePrimary stops a set's primary with SIGSTOP for d, then resumes it.
func pausePrimary(t *testing.T, rs *replSet, d time.Duration) {
	p := rs.procs[rs.waitPrimary(-1, 60*time.Second)]
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	time.Sleep(d)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
}

// A fault is one nemesis action: at a migration phase (held there by a
// fail point) or at any moment, it hurts one process and heals it.
type fault struct {
	name  string
	point string        // fail point holding the migration, "" for none
	phase migrate.Phase // the donor's recorded phase while it is held
	do    func(c *jepsenCluster, donor, recipient string)
}

// skewAhead is within the 250 ms bound a replica set tolerates; it is
// ahead so that a shard expires early rather than late, which the
// expiry checker, reading the test's clock, could not tell from a bug.
const skewAhead = "200ms"

func jepsenFaults() []fault {
	killShard := func(role string) func(c *jepsenCluster, donor, recipient string) {
		return func(c *jepsenCluster, donor, recipient string) {
			if role == "donor" {
				restartPrimary(c.shards[donor])
				return
			}
			restartPrimary(c.shards[recipient])
		}
	}
	return []fault{
		{"kill-donor@catchUp", failpoint.MigrationHangInCatchUp, migrate.PhaseCatchUp, killShard("donor")},
		{"kill-recipient@criticalSection", failpoint.MigrationHangInCriticalSection, migrate.PhaseCriticalSection, killShard("recipient")},
		{"kill-config@beforeCommit", failpoint.MigrationHangBeforeCommit, migrate.PhaseCommitStarted,
			func(c *jepsenCluster, _, _ string) { restartPrimary(c.config) }},
		{"kill-router", "", "", func(c *jepsenCluster, _, _ string) {
			addr := c.router.addr
			c.router.kill9()
			time.Sleep(300 * time.Millisecond)
			c.startRouter(addr)
		}},
		{"sigstop-donor@catchUp", failpoint.MigrationHangInCatchUp, migrate.PhaseCatchUp,
			func(c *jepsenCluster, donor, _ string) { pausePrimary(c.t, c.shards[donor], 3*time.Second) }},
		{"kill-donor@afterCommit", failpoint.MigrationHangAfterCommit, migrate.PhaseCommitStarted, killShard("donor")},
		{"kill-recipient@clone", failpoint.MigrationHangInClone, migrate.PhaseClone, killShard("recipient")},
		{"clock-skew-shard", "", "", func(c *jepsenCluster, _, _ string) {
			restartPrimary(c.shards[shardNames()[0]], "--test-clock-skew", skewAhead)
		}},
		{"kill-donor@criticalSection", failpoint.MigrationHangInCriticalSection, migrate.PhaseCriticalSection, killShard("donor")},
	}
}

// inject runs one fault; it reports false when no migration reached the
// fault's phase in time (the loop of migrations was between moves).
func (c *jepsenCluster) inject(f fault) bool {
	if f.point == "" {
		f.do(c, "", "")
		return true
	}
	c.setFailPoint(f.point, true)
	donor, recipient, ok := c.donorAt(f.phase, 20*time.Second)
	if ok {
		f.do(c, donor, recipient)
	}
	c.setFailPoint(f.point, false)
	return ok
}

const (
	jepsenColl    = "jep"
	jepsenKeys    = 200
	ttlIDBase     = 1_000_000 // documents that expire during the run
	durableIDBase = 2_000_000 // documents that must all be read back
)

// jepsenRun holds what the workers recorded, under mu.
type jepsenRun struct {
	mu         sync.Mutex
	history    []porcupine.Operation
	acked      []int32 // w:majority-acknowledged inserts of durable documents
	ackedAt    map[int32]time.Time
	ttlAcked   int
	lastExpiry time.Time // the latest expireAt inserted
	anomalies  []string
	scans      int
	committed  int
	aborted    int
	failures   map[string]int // failed moves by error code name
	reasons    map[string]int // failed moves by error, ids blanked (failureReason)
	retries    map[string]int // moves sent again, by the code of the refusal (runMove)
	faults     map[string]int
	missed     map[string]int
	versions   int // config.chunks polls
	next       atomic.Int64
	// events are the moves and faults, with their wall-clock times, for
	// the report of a failing run.
	events []string
}

// event notes a move or a fault for the report of a failing run.
func (r *jepsenRun) event(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, time.Now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

func (r *jepsenRun) anomaly(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.anomalies) < 50 {
		r.anomalies = append(r.anomalies, fmt.Sprintf(format, args...))
	}
}

// TestMigrationJepsen checks migrations the way Jepsen would: a loop of
// moveChunk and moveRange back and forth, the balancer on for part of the
// run, a nemesis killing, pausing or skewing the processes at each phase
// of the protocol, and checkers over what the clients saw. See
// jepsenSizeFromEnv for the long size.
func TestMigrationJepsen(t *testing.T) {
	size := jepsenSizeFromEnv(t)
	t.Logf("seed %d (MAYFLY_MIGRATION_SEED), run %v, %d faults, %d-member shards", size.seed, size.run, size.faults, size.members)
	began := time.Now()
	c := startJepsenCluster(t, size.members)
	keepJepsenLogs(t, c)
	cl := c.client()
	setUpJepsenCollection(t, c, cl)
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))
	run := &jepsenRun{faults: map[string]int{}, missed: map[string]int{}, failures: map[string]int{}, reasons: map[string]int{}, retries: map[string]int{}, ackedAt: map[int32]time.Time{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	coll := cl.Database("test").Collection(jepsenColl)
	stream, err := watchJepsen(coll)
	if err != nil {
		t.Fatalf("watch through the router: %v", err)
	}
	for client := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); runRegisterClient(ctx, coll, client, size.seed, run) }()
	}
	wg.Add(4)
	go func() { defer wg.Done(); runInserter(ctx, coll, run) }()
	go func() { defer wg.Done(); runScanner(ctx, coll, run) }()
	go func() { defer wg.Done(); runMigrationLoop(ctx, cl, size.seed, run) }()
	go func() { defer wg.Done(); recordVersions(ctx, c.admins["cfg"], run) }()
	runNemesis(t, c, cl, size, run)
	stop()
	wg.Wait()
	heal(t, c, cl)
	checked := time.Now()
	checkJepsenEnd(t, c, cl, run)
	t.Logf("end checks in %v", time.Since(checked).Round(time.Millisecond))
	checkLinearizable(t, run, size.seed, c.logPaths())
	checkJepsenStream(t, stream, coll, run)
	reportJepsen(t, run)
	c.disconnect(cl)
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

func setUpJepsenCollection(t *testing.T, c *jepsenCluster, cl *mongo.Client) {
	admin := cl.Database("admin")
	runCmd(t, admin, bson.D{{Key: "balancerStop", Value: 1}})
	for _, name := range shardNames() {
		runCmd(t, admin, bson.D{{Key: "addShard", Value: name + "/" + strings.Join(c.shards[name].addrs, ",")}})
	}
	runCmd(t, admin, bson.D{{Key: "enableSharding", Value: "test"}})
	runCmd(t, admin, bson.D{{Key: "shardCollection", Value: "test." + jepsenColl},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	if _, err := cl.Database("test").Collection(jepsenColl).Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys: bson.D{{Key: "expireAt", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
}

// runNemesis injects size.faults faults spread over the run, taking the
// kinds in turn, with the balancer on for the second half.
func runNemesis(t *testing.T, c *jepsenCluster, cl *mongo.Client, size jepsenSize, run *jepsenRun) {
	faults := jepsenFaults()
	start := time.Now()
	interval := size.run / time.Duration(size.faults+1)
	for i := range size.faults {
		time.Sleep(time.Until(start.Add(interval * time.Duration(i+1))))
		if i == size.faults/2 {
			setBalancer(t, cl, "balancerStart")
		}
		f := faults[i%len(faults)]
		ok := c.inject(f)
		run.mu.Lock()
		if ok {
			run.faults[f.name]++
		} else {
			run.missed[f.name]++
		}
		run.mu.Unlock()
		run.event("fault %s (at its phase: %v)", f.name, ok)
		t.Logf("%v: fault %s (at its phase: %v)", time.Since(start).Round(time.Millisecond), f.name, ok)
	}
	time.Sleep(time.Until(start.Add(size.run)))
}

func setBalancer(t *testing.T, cl *mongo.Client, cmd string) {
	if err := retryFor(30*time.Second, func() error {
		return cl.Database("admin").RunCommand(context.Background(), bson.D{{Key: cmd, Value: 1}}).Err()
	}); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
}

// heal stops the balancer and waits until no shard has a migration or a
// range deletion left.
func heal(t *testing.T, c *jepsenCluster, cl *mongo.Client) {
	start := time.Now()
	setBalancer(t, cl, "balancerStop")
	for _, name := range failpoint.MigrationNames() {
		c.setFailPoint(name, false)
	}
	for _, coll := range []string{migrate.CoordinatorsColl, migrate.RangeDeletionsColl} {
		for _, shard := range shardNames() {
			records := c.admins[shard].Database(migrate.RecordDB).Collection(coll)
			if err := retryFor(90*time.Second, func() error {
				n, err := records.CountDocuments(context.Background(), bson.D{})
				if err == nil && n > 0 {
					err = fmt.Errorf("%d left", n)
				}
				return err
			}); err != nil {
				t.Errorf("after healing, %s on %s: %v", coll, shard, err)
			}
		}
	}
	t.Logf("healed in %v: no migration or range deletion left", time.Since(start).Round(time.Millisecond))
}

// checkJepsenEnd: the chunks cover the key space once; each shard
// stores only what it owns, and no document is on two shards; every
// acknowledged durable insert reads back once through the router, the
// count equals the distinct ids, and every expiring document is gone.
func checkJepsenEnd(t *testing.T, c *jepsenCluster, cl *mongo.Client, run *jepsenRun) {
	cs, err := routedChunks(cl)
	if err != nil {
		t.Fatal(err)
	}
	checkChunkChain(t, cs)
	run.mu.Lock()
	lastExpiry := run.lastExpiry
	run.mu.Unlock()
	time.Sleep(time.Until(lastExpiry))
	if err := retryFor(60*time.Second, func() error { return shardsHoldOnlyOwned(c, cs) }); err != nil {
		t.Errorf("after healing: %v", err)
	}
	coll := cl.Database("test").Collection(jepsenColl)
	seen := map[int32]bool{}
	cur, err := coll.Find(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for cur.Next(ctxT(t)) {
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			run.anomaly("final scan returned _id %d twice", id)
		}
		if id >= ttlIDBase && id < durableIDBase {
			run.anomaly("final scan returned expiring _id %d", id)
		}
		seen[id] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range run.acked {
		if !seen[id] {
			h, _ := shardkey.Hash(id)
			run.anomaly("acknowledged insert of _id %d (hashed %d, acknowledged at %s) lost", id, h,
				run.ackedAt[id].UTC().Format("15:04:05.000"))
		}
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || int(n) != len(seen) {
		run.anomaly("count through the router %d (%v), distinct ids %d", n, err, len(seen))
	}
}

// checkChunkChain: the chunks, in key order, run from MinKey to MaxKey
// with no gap or overlap, so each range has one owner on the config set.
func checkChunkChain(t *testing.T, cs []shardmeta.Chunk) {
	if len(cs) == 0 || cs[0].Min[0].Value != (bson.MinKey{}) || cs[len(cs)-1].Max[0].Value != (bson.MaxKey{}) {
		t.Fatalf("chunks do not span the key space: %v", cs)
	}
	for i := 1; i < len(cs); i++ {
		if fmt.Sprint(cs[i-1].Max) != fmt.Sprint(cs[i].Min) {
			t.Fatalf("chunk %d ends at %v, the next starts at %v", i-1, cs[i-1].Max, cs[i].Min)
		}
	}
}

// shardsHoldOnlyOwned reads each shard's documents past the router:
// each must be in a chunk the shard owns (range deletion finished, no
// orphan left), and none may be on two shards, nor be an expiring one
// (the TTL monitors deleted them).
func shardsHoldOnlyOwned(c *jepsenCluster, cs []shardmeta.Chunk) error {
	where := map[int32]string{}
	for _, shard := range shardNames() {
		cur, err := c.admins[shard].Database("test").Collection(jepsenColl).Find(context.Background(), bson.D{},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return fmt.Errorf("scan of %s: %w", shard, err)
		}
		var docs []struct {
			ID int32 `bson:"_id"`
		}
		if err := cur.All(context.Background(), &docs); err != nil {
			return fmt.Errorf("scan of %s: %w", shard, err)
		}
		for _, d := range docs {
			if other, ok := where[d.ID]; ok {
				return fmt.Errorf("_id %d is on %s and %s", d.ID, other, shard)
			}
			where[d.ID] = shard
			if owner := ownerOfID(cs, d.ID); owner != shard {
				return fmt.Errorf("_id %d is on %s, owned by %s", d.ID, shard, owner)
			}
			if d.ID >= ttlIDBase && d.ID < durableIDBase {
				return fmt.Errorf("expired _id %d still stored on %s", d.ID, shard)
			}
		}
	}
	return nil
}

// ownerOfID is the shard owning document id's hashed _id ("" if none).
func ownerOfID(cs []shardmeta.Chunk, id int32) string {
	h, err := shardkey.Hash(id)
	if err != nil {
		return ""
	}
	for _, ch := range cs {
		if (migrate.Range{Min: ch.Min, Max: ch.Max}).Contains(bson.D{{Key: "_id", Value: h}}) {
			return ch.Shard
		}
	}
	return ""
}

// checkLinearizable checks the register history with porcupine; a
// failing one is saved with its seed for porcupine's visualisation.
func checkLinearizable(t *testing.T, run *jepsenRun, seed uint64, logs []string) {
	res, info := porcupine.CheckOperationsVerbose(casModel, run.history, 120*time.Second)
	t.Logf("porcupine over %d register operations: %s", len(run.history), res)
	if res == porcupine.Ok && len(run.anomalies) == 0 {
		return
	}
	dir, err := os.MkdirTemp("", "mayfly-migration-jepsen-")
	if err != nil {
		t.Fatalf("history not saved: %v", err)
	}
	saved, err := json.MarshalIndent(struct {
		Seed      uint64
		Result    porcupine.CheckResult
		Anomalies []string
		History   []porcupine.Operation
	}{seed, res, run.anomalies, run.history}, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "history.json"), saved, 0o644)
	}
	if err == nil {
		err = porcupine.VisualizePath(casModel, info, filepath.Join(dir, "history.html"))
	}
	for _, l := range logs {
		if err == nil {
			err = copyFile(l, filepath.Join(dir, filepath.Base(filepath.Dir(l))+"-"+filepath.Base(l)))
		}
	}
	if err != nil {
		t.Errorf("saving the history in %s: %v", dir, err)
	}
	t.Errorf("seed %d: porcupine %s, %d anomalies; history and visualisation in %s", seed, res, len(run.anomalies), dir)
	reportIllegalKeys(t, run) // the moves and faults, with any key that is not linearizable
	for _, a := range run.anomalies {
		t.Errorf("anomaly: %s", a)
	}
}

// checkJepsenStream ends the change stream at a sentinel write and
// checks what it showed (checkStream).
func checkJepsenStream(t *testing.T, stream *jepsenStream, coll *mongo.Collection, run *jepsenRun) {
	if err := stream.finish(coll); err != nil {
		t.Errorf("change stream through the router: %v", err)
		return
	}
	events := stream.snapshot()
	bad := checkStream(events, run)
	stream.mu.Lock()
	reopens := stream.reopens
	stream.mu.Unlock()
	t.Logf("change stream through the router: %d events, %d anomalies, reopened %d times after its last token", len(events), len(bad), reopens)
	for _, b := range bad {
		t.Errorf("change stream: %s", b)
	}
	if len(bad) > 0 {
		logMovesAndFaults(t, run)
	}
}

// logPaths are the cluster's processes' log files.
func (c *jepsenCluster) logPaths() []string {
	out := []string{c.routerLog}
	for _, rs := range append([]*replSet{c.config}, c.shards["shA"], c.shards["shB"]) {
		for _, d := range rs.dirs {
			out = append(out, filepath.Clean(d)+".log")
		}
	}
	return out
}

// keepJepsenLogs copies every process log into the directory
// MAYFLY_MIGRATION_KEEP_LOGS names when the test ends, passing or not: a
// long run's moves are read from the logs of a run that passed too.
func keepJepsenLogs(t *testing.T, c *jepsenCluster) {
	dir := os.Getenv("MAYFLY_MIGRATION_KEEP_LOGS")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("MAYFLY_MIGRATION_KEEP_LOGS: %v", err)
			return
		}
		for _, l := range c.logPaths() {
			if err := copyFile(l, filepath.Join(dir, filepath.Base(filepath.Dir(l))+"-"+filepath.Base(l))); err != nil {
				t.Errorf("MAYFLY_MIGRATION_KEEP_LOGS: %v", err)
			}
		}
		t.Logf("process logs kept in %s", dir)
	})
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// reportIllegalKeys prints, for the first keys whose history is not
// linearizable (if any), each operation with its wall-clock times, then
// the moves and faults of the run, so that a failure in CI says what
// happened around it.
func reportIllegalKeys(t *testing.T, run *jepsenRun) {
	reported := 0
	for _, ops := range casModel.Partition(run.history) {
		if reported == 2 || porcupine.CheckOperations(casModel, ops) {
			continue
		}
		reported++
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		key := ops[0].Input.(casInput).Key
		h, _ := shardkey.Hash(key)
		t.Logf("key %d (hashed %d) is not linearizable; its %d operations:", key, h, len(ops))
		for _, op := range ops {
			ret := "never"
			if op.Return != math.MaxInt64 {
				ret = time.Unix(0, op.Return).UTC().Format("15:04:05.000")
			}
			t.Logf("  %s–%s client %d: %s", time.Unix(0, op.Call).UTC().Format("15:04:05.000"), ret, op.ClientId,
				casModel.DescribeOperation(op.Input, op.Output))
		}
	}
	logMovesAndFaults(t, run)
}

// logMovesAndFaults prints the run's moves and faults with their times,
// to set beside a failure's.
func logMovesAndFaults(t *testing.T, run *jepsenRun) {
	t.Logf("moves and faults:")
	for _, e := range run.events {
		t.Logf("  %s", e)
	}
}

// reportJepsen prints the run's figures and fails a run too thin to
// have proved anything.
func reportJepsen(t *testing.T, run *jepsenRun) {
	run.mu.Lock()
	defer run.mu.Unlock()
	kinds := map[string]int{}
	unknown := 0
	for _, op := range run.history {
		kinds[op.Input.(casInput).Kind]++
		if op.Output.(casOutput).Unknown {
			unknown++
		}
	}
	t.Logf("register ops %v (%d unknown outcomes); durable inserts acked %d, expiring inserts acked %d; scans %d; "+
		"migrations committed %d, failed %d %v; config.chunks polls %d; faults %v, missed their phase %v; anomalies %d",
		kinds, unknown, len(run.acked), run.ttlAcked, run.scans, run.committed, run.aborted, run.failures, run.versions,
		run.faults, run.missed, len(run.anomalies))
	t.Logf("moves sent again after a transient refusal: %v", run.retries)
	reasons := slices.Collect(maps.Keys(run.reasons))
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Compare(run.reasons[b], run.reasons[a]) })
	for _, r := range reasons[:min(len(reasons), 8)] {
		t.Logf("  %d moves failed with %s", run.reasons[r], r)
	}
	if run.committed < 2 || run.scans < 10 || len(run.history) < 200 || len(run.acked) < 50 {
		t.Errorf("too little happened to prove anything: %d migrations, %d scans, %d register ops, %d durable inserts",
			run.committed, run.scans, len(run.history), len(run.acked))
	}
}
