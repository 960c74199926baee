package integration

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// The crash harness: the real binary, journaled writes (inserts, updates
// that move an indexed field, deletes), unjournaled w:1 inserts, a TTL
// collection whose documents expire during the run, and SIGKILL at a
// random moment, over and over. After every restart it checks:
//
//   - every acknowledged j:true write is there, exactly as acknowledged;
//   - every w:1 write acknowledged well before the kill is there (the
//     100 ms journal interval): inserts, and updates of the documents
//     inserted, in every fourth cycle, which runs long enough for some
//     to be acknowledged 500 ms before the kill;
//   - a write in flight at the kill is wholly there or wholly absent: a
//     collection scan and a scan of the secondary index agree document by
//     document, and nothing appears that was never written;
//   - no expired TTL document is visible, every unexpired acknowledged one
//     is, and the TTL monitor deletes again after recovery;
//   - validate is clean (when the command exists).
//
// MAYFLY_CRASH_CYCLES raises the number of cycles for a longer run.
func TestReliabilityCrashHarness(t *testing.T) {
	cycles := 20
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_CRASH_CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 0))
	m := newCrashModel()
	start := time.Now()
	stats := crashStats{}
	for cycle := 0; cycle < cycles; cycle++ {
		p, err := startMayfly(t, bin, dir, addr, "--ttl-monitor-sleep-secs", "1")
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		verifyAfterCrash(t, p.addr, m, cycle, false)
		if cycle == 0 {
			setupCrashCollections(t, p.addr)
		}
		d := time.Duration(30+rng.IntN(400)) * time.Millisecond
		if cycle%4 == 3 {
			// Long enough that w:1 writes acknowledged 500 ms before the
			// kill must be there.
			d = time.Duration(800+rng.IntN(400)) * time.Millisecond
		}
		runUntilKilled(t, p, m, cycle, d, &stats)
	}
	p, err := startMayfly(t, bin, dir, addr, "--ttl-monitor-sleep-secs", "1")
	if err != nil {
		t.Fatal(err)
	}
	verifyAfterCrash(t, p.addr, m, cycles, true)
	t.Logf("%d kill -9 cycles in %v: %d acknowledged j:true writes, %d w:1 inserts and updates, %d TTL inserts, %d writes in flight at a kill",
		cycles, time.Since(start).Round(time.Millisecond), stats.acked, stats.w1, stats.ttl, stats.inFlight)
}

type crashStats struct{ acked, w1, ttl, inFlight int }

// docState is one possible state of a document; present false means gone.
type docState struct {
	present bool
	k       int64
}

// crashModel records, per _id, every state a document may be in after a
// crash: one when its last write was acknowledged, two when a write was in
// flight.
type crashModel struct {
	mu      sync.Mutex
	allowed map[int64][]docState
	// w1 holds the unjournaled documents: _id → each acknowledged value
	// of n with its time, in order, the insert's (n 0) first; an update in
	// flight at a kill is the last value + 1.
	w1 map[int64][]ackedN
	// sessions holds TTL documents: _id → expireAt (acknowledged) .
	sessions  map[int64]time.Time
	maybeSess map[int64]time.Time // in flight at a kill
	nextID    int64
	killedAt  time.Time // when the last SIGKILL was sent
}

func newCrashModel() *crashModel {
	return &crashModel{allowed: map[int64][]docState{}, w1: map[int64][]ackedN{},
		sessions: map[int64]time.Time{}, maybeSess: map[int64]time.Time{}}
}

func (m *crashModel) newID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	return m.nextID
}

// settle records the outcome of a write that moves a document from its
// current state to next: certain if acknowledged, either if not.
func (m *crashModel) settle(id int64, next docState, acked bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if acked {
		m.allowed[id] = []docState{next}
		return
	}
	m.allowed[id] = append(m.allowed[id], next)
}

func setupCrashCollections(t *testing.T, addr string) {
	c := quickClient(t, addr, 10*time.Second)
	db := c.Database("crash")
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}},
	}}})
	createTTL(t, db, "sessions", "expireAt", 0)
	_ = c.Disconnect(context.Background())
}

// runUntilKilled drives the workload, kills the server after d, and waits
// for every client to see the failure.
func runUntilKilled(t *testing.T, p *process, m *crashModel, cycle int, d time.Duration, st *crashStats) {
	c := quickClient(t, p.addr, 3*time.Second)
	db := c.Database("crash")
	j := db.Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	w1 := db.Collection("w1", options.Collection().SetWriteConcern(writeconcern.W1()))
	sess := db.Collection("sessions", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	var wg sync.WaitGroup
	results := make([]crashStats, 6)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[w] = journaledWorker(j, m, uint64(cycle*10+w)) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); results[4] = w1Worker(w1, m, uint64(cycle)) }()
	go func() { defer wg.Done(); results[5] = ttlWorker(sess, m, uint64(cycle)) }()
	time.Sleep(d)
	m.mu.Lock()
	m.killedAt = time.Now()
	m.mu.Unlock()
	p.kill9()
	wg.Wait()
	_ = c.Disconnect(context.Background())
	for _, r := range results {
		st.acked += r.acked
		st.w1 += r.w1
		st.ttl += r.ttl
		st.inFlight += r.inFlight
	}
}

// journaledWorker inserts documents with k = _id, later moves k to -_id,
// and deletes some, all with j:true, until a write fails.
func journaledWorker(coll *mongo.Collection, m *crashModel, seed uint64) crashStats {
	rng := rand.New(rand.NewPCG(seed, 1))
	var st crashStats
	var mine []int64 // acknowledged, present, k still = _id
	ctx := context.Background()
	for {
		var err error
		switch op := rng.IntN(6); {
		case op < 3 || len(mine) == 0:
			id := m.newID()
			m.settle(id, docState{}, true) // absent until acknowledged
			_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}, {Key: "pad", Value: pad(rng)}})
			m.settle(id, docState{present: true, k: id}, err == nil)
			if err == nil {
				mine = append(mine, id)
			}
		case op < 5:
			id := mine[len(mine)-1]
			mine = mine[:len(mine)-1]
			_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: -id}}}})
			m.settle(id, docState{present: true, k: -id}, err == nil)
		default:
			i := rng.IntN(len(mine))
			id := mine[i]
			mine = append(mine[:i], mine[i+1:]...)
			_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
			m.settle(id, docState{}, err == nil)
		}
		if err != nil {
			st.inFlight++
			return st
		}
		st.acked++
	}
}

func pad(rng *rand.Rand) string {
	b := make([]byte, 16+rng.IntN(2000))
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// ackedN is an acknowledged value of a w:1 document's n.
type ackedN struct {
	n  int64
	at time.Time
}

// w1Worker inserts unjournaled documents, and in between raises the n of
// one of them, until a write fails.
func w1Worker(coll *mongo.Collection, m *crashModel, seed uint64) crashStats {
	rng := rand.New(rand.NewPCG(seed, 3))
	var st crashStats
	var mine []int64
	for {
		if len(mine) > 0 && rng.IntN(2) == 0 {
			if err := w1Update(coll, m, mine[rng.IntN(len(mine))]); err != nil {
				return st
			}
			st.w1++
			continue
		}
		id := m.newID()
		if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: id}, {Key: "n", Value: int64(0)}}); err != nil {
			return st
		}
		m.mu.Lock()
		m.w1[id] = []ackedN{{n: 0, at: time.Now()}}
		m.mu.Unlock()
		mine = append(mine, id)
		st.w1++
	}
}

// w1Update sets a document's n to its last value + 1, unjournaled.
func w1Update(coll *mongo.Collection, m *crashModel, id int64) error {
	m.mu.Lock()
	hist := m.w1[id]
	next := hist[len(hist)-1].n + 1
	m.mu.Unlock()
	if _, err := coll.UpdateOne(context.Background(), bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: next}}}}); err != nil {
		return err
	}
	m.mu.Lock()
	m.w1[id] = append(m.w1[id], ackedN{n: next, at: time.Now()})
	m.mu.Unlock()
	return nil
}

// ttlWorker inserts session documents expiring within 1.5 s (one in ten a
// day later) with j:true until one fails.
func ttlWorker(coll *mongo.Collection, m *crashModel, seed uint64) crashStats {
	rng := rand.New(rand.NewPCG(seed, 2))
	var st crashStats
	for {
		id := m.newID()
		exp := time.Now().Add(time.Duration(rng.IntN(1500)) * time.Millisecond).Truncate(time.Millisecond)
		if rng.IntN(10) == 0 {
			exp = exp.Add(24 * time.Hour)
		}
		_, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: id}, {Key: "expireAt", Value: exp}})
		m.mu.Lock()
		if err != nil {
			m.maybeSess[id] = exp
		} else {
			m.sessions[id] = exp
		}
		m.mu.Unlock()
		if err != nil {
			st.inFlight++
			return st
		}
		st.ttl++
	}
}

// verifyAfterCrash checks the recovered data against the model and then
// narrows the model to what was found.
func verifyAfterCrash(t *testing.T, addr string, m *crashModel, cycle int, waitTTL bool) {
	t.Helper()
	c := quickClient(t, addr, 15*time.Second)
	defer func() { _ = c.Disconnect(context.Background()) }()
	db := c.Database("crash")
	ctx := ctxT(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	verifyJournaled(t, ctx, db.Collection("c"), m, cycle)
	verifyW1(t, ctx, db.Collection("w1"), m, cycle)
	verifySessions(t, ctx, db.Collection("sessions"), m, cycle)
	for _, coll := range []string{"c", "w1", "sessions"} {
		verifyValidate(t, db, coll, cycle)
	}
	if waitTTL {
		waitTTLDeletes(t, db, cycle)
	}
}

func verifyJournaled(t *testing.T, ctx context.Context, coll *mongo.Collection, m *crashModel, cycle int) {
	t.Helper()
	byScan := scanK(t, ctx, coll, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}), cycle)
	byIndex := scanK(t, ctx, coll, options.Find().SetHint("k_1"), cycle)
	if len(byScan) != len(byIndex) {
		t.Fatalf("cycle %d: collection scan finds %d documents, index k_1 %d", cycle, len(byScan), len(byIndex))
	}
	checked := 0
	for id, k := range byScan {
		if ik, ok := byIndex[id]; !ok || ik != k {
			t.Fatalf("cycle %d: _id %d has k %d but the index gives %d (present %v)", cycle, id, k, ik, ok)
		}
		// A sample of point lookups through the index (map order is random).
		if checked++; checked > 20 {
			continue
		}
		var one bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "k", Value: k}}).Decode(&one); err != nil || one["_id"] != id {
			t.Fatalf("cycle %d: find {k: %d} gives %v, %v; want _id %d", cycle, k, one["_id"], err, id)
		}
	}
	for id, states := range m.allowed {
		k, present := byScan[id]
		got := docState{present: present, k: k}
		if !containsState(states, got) {
			t.Fatalf("cycle %d: _id %d is %+v after the crash; allowed %+v", cycle, id, got, states)
		}
		if present {
			m.allowed[id] = []docState{got}
		} else {
			delete(m.allowed, id)
		}
	}
	for id := range byScan {
		if _, ok := m.allowed[id]; !ok {
			t.Fatalf("cycle %d: _id %d was never written but is there", cycle, id)
		}
	}
}

func containsState(states []docState, s docState) bool {
	for _, x := range states {
		if x.present == s.present && (!s.present || x.k == s.k) {
			return true
		}
	}
	return false
}

// scanK returns _id → k for every document found with opts, failing on a
// duplicate (a stale index entry still pointing at a moved document).
func scanK(t *testing.T, ctx context.Context, coll *mongo.Collection, opts *options.FindOptionsBuilder, cycle int) map[int64]int64 {
	t.Helper()
	cur, err := coll.Find(ctx, bson.D{}, opts)
	if err != nil {
		t.Fatalf("cycle %d: find: %v", cycle, err)
	}
	var docs []struct {
		ID int64 `bson:"_id"`
		K  int64 `bson:"k"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatalf("cycle %d: read: %v", cycle, err)
	}
	out := make(map[int64]int64, len(docs))
	for _, d := range docs {
		if _, dup := out[d.ID]; dup {
			t.Fatalf("cycle %d: _id %d returned twice", cycle, d.ID)
		}
		out[d.ID] = d.K
	}
	return out
}

// verifyW1 allows the last 500 ms of unjournaled writes to be lost (the
// journal interval is 100 ms; the rest is slack for a loaded machine).
func verifyW1(t *testing.T, ctx context.Context, coll *mongo.Collection, m *crashModel, cycle int) {
	t.Helper()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int64 `bson:"_id"`
		N  int64 `bson:"n"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	found := map[int64]bool{}
	lostN, oldestN := 0, time.Duration(0)
	for _, d := range docs {
		found[d.ID] = true
		if age, lost := verifyW1N(t, m, d.ID, d.N, cycle); lost {
			lostN, oldestN = lostN+1, max(oldestN, age)
		}
	}
	if lostN > 0 {
		t.Logf("cycle %d: %d documents lost w:1 updates, acknowledged at most %v before the kill (allowed: 500ms)", cycle, lostN, oldestN)
	}
	lost, oldest := 0, time.Duration(0)
	for id, hist := range m.w1 {
		if found[id] {
			continue
		}
		at := hist[0].at
		if at.Before(m.killedAt.Add(-500 * time.Millisecond)) {
			t.Fatalf("cycle %d: w:1 insert %d acknowledged %v before the kill is lost", cycle, id, m.killedAt.Sub(at))
		}
		lost++
		oldest = max(oldest, m.killedAt.Sub(at))
		delete(m.w1, id)
	}
	if lost > 0 {
		t.Logf("cycle %d: %d w:1 inserts lost, acknowledged at most %v before the kill (allowed: 500ms)", cycle, lost, oldest)
	}
}

// verifyW1N checks a w:1 document's n: at least the last value
// acknowledged 500 ms before the kill, at most the value in flight then;
// the model keeps the value found. It reports whether acknowledged
// updates were lost, and how long before the kill the first of them was.
func verifyW1N(t *testing.T, m *crashModel, id, n int64, cycle int) (age time.Duration, lost bool) {
	t.Helper()
	hist, ok := m.w1[id]
	if !ok {
		return 0, false // its insert was in flight at the kill: n is 0
	}
	floor := hist[0].n
	for _, a := range hist {
		if a.at.Before(m.killedAt.Add(-500 * time.Millisecond)) {
			floor = a.n
		}
	}
	if n < floor || n > hist[len(hist)-1].n+1 {
		t.Fatalf("cycle %d: w:1 document %d has n %d after the crash; acknowledged %d at least 500ms before the kill, %d last", cycle, id, n, floor, hist[len(hist)-1].n)
	}
	for _, a := range hist {
		if a.n > n {
			age, lost = m.killedAt.Sub(a.at), true
			break
		}
	}
	m.w1[id] = []ackedN{{n: n, at: hist[0].at}}
	return age, lost
}

func verifySessions(t *testing.T, ctx context.Context, coll *mongo.Collection, m *crashModel, cycle int) {
	t.Helper()
	before := time.Now()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID       int64     `bson:"_id"`
		ExpireAt time.Time `bson:"expireAt"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	found := map[int64]bool{}
	for _, d := range docs {
		found[d.ID] = true
		exp, acked := m.sessions[d.ID]
		if !acked {
			var maybe bool
			if exp, maybe = m.maybeSess[d.ID]; !maybe {
				t.Fatalf("cycle %d: session %d was never written", cycle, d.ID)
			}
			m.sessions[d.ID] = exp // its write turned out to have committed
		}
		if !d.ExpireAt.Equal(exp) {
			t.Fatalf("cycle %d: session %d expireAt %v, written %v", cycle, d.ID, d.ExpireAt, exp)
		}
		if exp.Before(before) {
			t.Fatalf("cycle %d: session %d expired %v before the query and is still visible", cycle, d.ID, before.Sub(exp))
		}
	}
	for id, exp := range m.sessions {
		if !found[id] && exp.After(after) {
			t.Fatalf("cycle %d: acknowledged session %d (expires in %v) is missing", cycle, id, exp.Sub(after))
		}
		if exp.Before(before) {
			delete(m.sessions, id) // expired; never to be seen again
		}
	}
	clear(m.maybeSess)
}

// verifyValidate runs validate when the command exists.
func verifyValidate(t *testing.T, db *mongo.Database, coll string, cycle int) {
	t.Helper()
	var out bson.M
	err := db.RunCommand(ctxT(t), bson.D{{Key: "validate", Value: coll}}).Decode(&out)
	var ce mongo.CommandError
	if errorAs(err, &ce) && (ce.Code == 59 || ce.Code == 26) {
		return // validate not built yet, or the collection not created yet
	}
	if err != nil {
		t.Fatalf("cycle %d: validate %s: %v", cycle, coll, err)
	}
	if out["valid"] != true {
		t.Fatalf("cycle %d: validate %s: %v", cycle, coll, out)
	}
}

// waitTTLDeletes checks that the TTL monitor deletes again after
// recovery: one document already expired must go within a few seconds.
func waitTTLDeletes(t *testing.T, db *mongo.Database, cycle int) {
	t.Helper()
	expired := bson.D{{Key: "_id", Value: int64(-1)}, {Key: "expireAt", Value: time.Now().Add(-time.Minute)}}
	if _, err := db.Collection("sessions").InsertOne(ctxT(t), expired); err != nil {
		t.Fatalf("cycle %d: %v", cycle, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ttlDeleted(t, db) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("cycle %d: the TTL monitor deleted nothing within 5s of a restart", cycle)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
