package ttl

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, secs int) (*Monitor, *docstore.Collection, *clock.Manual) {
	t.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	clk := clock.NewManual(t0)
	s, err := docstore.Open(eng, docstore.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection("db", "s", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: secs}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		t.Fatal(err)
	}
	return New(s, clk, Config{BatchDocs: 10, CPUs: 2}), c, clk
}

func add(t *testing.T, c *docstore.Collection, id int, at time.Time) {
	t.Helper()
	if err := c.Insert(bson.D{{Key: "_id", Value: id}, {Key: "t", Value: bson.NewDateTimeFromTime(at)}}, docstore.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestNextWaitFollowsEarliestExpiry(t *testing.T) {
	m, c, clk := setup(t, 60)
	if got := m.nextWait(); got != 60*time.Second {
		t.Fatalf("nothing to expire: wait %v, want ttlMonitorSleepSecs", got)
	}
	add(t, c, 1, t0.Add(-50*time.Second)) // expires at t0+10s
	if got := m.nextWait(); got != 10*time.Second {
		t.Fatalf("wait %v, want 10s", got)
	}
	clk.Advance(10 * time.Second)
	if got := m.nextWait(); got != 0 {
		t.Fatalf("overdue expiry with no pass for a while: wait %v, want 0", got)
	}
	since := m.cfg.Floor / 3
	m.lastDocs, m.lastGap = int64(m.cfg.BatchDocs)*4, m.cfg.Floor // a storm's passes
	m.lastPass.Store(clk.Now().Add(-since).UnixNano())
	if got := m.nextWait(); got != m.cfg.Floor-since {
		t.Fatalf("a pass started %v ago: wait %v, want the rest of the floor", since, got)
	}
	m.SetSleepSecs(5)
	clk.Set(t0)
	if got := m.nextWait(); got != 5*time.Second {
		t.Fatalf("ttlMonitorSleepSecs caps the wait: %v", got)
	}
}

// Passes that carry a batch or more start Floor apart; passes that carry
// less start further apart, so that a trickle's passes each carry about a
// batch, up to trickleFloor.
func TestFloorFollowsThePassesLoad(t *testing.T) {
	m, _, _ := setup(t, 60)
	batch := int64(m.cfg.BatchDocs)
	for _, tc := range []struct {
		name  string
		floor time.Duration // Config.Floor
		docs  int64         // deleted by the latest pass
		gap   time.Duration // since the pass before it
		want  time.Duration
	}{
		{"a storm: several batches a pass", 15 * time.Millisecond, 4 * batch, 15 * time.Millisecond, 15 * time.Millisecond},
		{"one batch a pass", 15 * time.Millisecond, batch, 15 * time.Millisecond, 15 * time.Millisecond},
		{"half a batch a pass", 15 * time.Millisecond, batch / 2, 15 * time.Millisecond, 30 * time.Millisecond},
		{"a trickle", 15 * time.Millisecond, 1, 50 * time.Millisecond, trickleFloor},
		{"nothing deleted", 15 * time.Millisecond, 0, time.Second, trickleFloor},
		{"after a long sleep", 15 * time.Millisecond, 3, time.Minute, trickleFloor},
		{"a floor above the trickle's", 80 * time.Millisecond, 4 * batch, 80 * time.Millisecond, 80 * time.Millisecond},
		{"a floor above the trickle's, a trickle", 80 * time.Millisecond, 1, time.Second, 80 * time.Millisecond},
	} {
		m.cfg.Floor, m.lastDocs, m.lastGap = tc.floor, tc.docs, tc.gap
		if got := m.floor(); got != tc.want {
			t.Errorf("%s: floor %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pass records what the next floor is judged by: the documents it
// deleted and the time since the pass before it.
func TestPassRecordsItsLoad(t *testing.T) {
	m, c, clk := setup(t, 0)
	for i := range 25 {
		add(t, c, i, t0.Add(-time.Second))
	}
	m.Pass(context.Background())
	clk.Advance(20 * time.Millisecond)
	add(t, c, 100, t0)
	m.Pass(context.Background())
	if m.lastDocs != 1 || m.lastGap != 20*time.Millisecond {
		t.Fatalf("after a pass of one document 20ms after the one before: lastDocs %d, lastGap %v", m.lastDocs, m.lastGap)
	}
}

// TestInactiveMonitorWaitsForItsKick: a secondary's monitor, which may not
// delete, does not plan a wake-up for an expiry that is already due (it
// would wake at once, forever), and plans one again once active.
func TestInactiveMonitorWaitsForItsKick(t *testing.T) {
	m, c, clk := setup(t, 60)
	active := false
	m.cfg.Active = func() bool { return active }
	add(t, c, 1, t0.Add(-70*time.Second)) // due since t0-10s
	if got := m.nextWait(); got != 60*time.Second {
		t.Fatalf("inactive with an expiry due: wait %v, want ttlMonitorSleepSecs", got)
	}
	active = true
	clk.Advance(time.Second)
	if got := m.nextWait(); got != 0 {
		t.Fatalf("active with an expiry due: wait %v, want 0", got)
	}
}

func TestPassDeletesEverythingExpiredInBatches(t *testing.T) {
	m, c, clk := setup(t, 0)
	for i := 0; i < 35; i++ {
		add(t, c, i, t0.Add(time.Duration(i)*time.Second))
	}
	clk.Set(t0.Add(24 * time.Second)) // 0..24 expired
	m.Pass(context.Background())
	st := m.Stats()
	if st.DeletedDocuments != 25 || st.Passes != 1 || st.SubPasses != 3 || st.DeletedKeys != 50 {
		t.Fatalf("stats %+v", st)
	}
	if c.Count() != 10 {
		t.Fatalf("left %d", c.Count())
	}
}

// Documents expiring far from _id order are deleted in bigger batches
// once a batch has found them scattered.
func TestScatteredDocumentsGetBiggerBatches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		id        func(i int) int
		subPasses int64
	}{
		{"in order", func(i int) int { return i }, 4},              // 10 a batch
		{"scattered", func(i int) int { return (i * 37) % 50 }, 3}, // 10, 10, then 30
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c, clk := setup(t, 0)
			m.cfg.ScatteredBatches = 3
			for i := 0; i < 40; i++ {
				add(t, c, tc.id(i), t0.Add(time.Duration(i)*time.Millisecond))
			}
			clk.Set(t0.Add(time.Second))
			m.Pass(context.Background())
			if st := m.Stats(); st.DeletedDocuments != 40 || st.SubPasses != tc.subPasses {
				t.Fatalf("stats %+v, want 40 deleted in %d sub-passes", st, tc.subPasses)
			}
		})
	}
}

func TestRunWakesAtExpiryWithoutPolling(t *testing.T) {
	m, c, clk := setup(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	add(t, c, 1, t0.Add(5*time.Second))
	// The write's expiry hint re-plans the sleep; moving the clock past it
	// fires the timer and the pass deletes the document.
	waitFor(t, func() bool { return m.wakeAt.Load() == t0.Add(5*time.Second).UnixNano() })
	clk.Advance(5 * time.Second)
	waitFor(t, func() bool { return m.Stats().DeletedDocuments == 1 })
	if m.Stats().Passes != 1 {
		t.Fatalf("exactly one pass ran: %+v", m.Stats())
	}
}

// waitFor polls a condition that another goroutine makes true once the
// manual clock has moved; it does not wait on wall-clock expiry.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not reached")
}

func TestPaceRestsOnlyWhileClientsAreBusy(t *testing.T) {
	m, _, clk := setup(t, 0)
	m.SetPace(0.25) // of two cores: half of the monitor's own thread
	m.cfg.Echo = 1  // and as much again for the storage engine
	busy := false
	m.cfg.Busy = func() bool { return busy }
	if got := m.pauseFor(40*time.Millisecond, 40*time.Millisecond); got != 0 {
		t.Fatalf("an idle server must not pace deletion: pause %v", got)
	}
	busy = true
	// 40ms of CPU counts 80ms with the echo; at half a thread, batch and
	// rest last 160ms.
	if got := m.pauseFor(40*time.Millisecond, 40*time.Millisecond); got != 120*time.Millisecond {
		t.Fatalf("pause %v, want 120ms", got)
	}
	done := make(chan struct{})
	go func() { m.rest(context.Background(), 40*time.Millisecond, 40*time.Millisecond); close(done) }()
	waitFor(t, func() bool { return clk.Pending() == 1 })
	clk.Advance(119 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("rested less than the pause")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("rest did not end when its time came")
	}
}

// A batch is measured by the CPU time it used, not by the wall time it
// took: time spent waiting for a CPU while requests ran is not deletion.
func TestWorkIsMeasuredInCPUTime(t *testing.T) {
	m, _, clk := setup(t, 0)
	cpu := 5 * time.Millisecond
	m.cfg.CPUTime = func() (time.Duration, bool) { return cpu, true }
	work := m.startWork()
	clk.Advance(40 * time.Millisecond)
	cpu += 10 * time.Millisecond
	if c, w := work(); c != 10*time.Millisecond || w != 40*time.Millisecond {
		t.Fatalf("work %v over %v, want 10ms of CPU time over 40ms", c, w)
	}
	m.cfg.CPUTime = func() (time.Duration, bool) { return 0, false }
	work = m.startWork()
	clk.Advance(40 * time.Millisecond)
	if c, w := work(); c != 40*time.Millisecond || w != 40*time.Millisecond {
		t.Fatalf("without a CPU clock: work %v over %v, want the wall time", c, w)
	}
}

// A clock set back during a batch (the test clock, or the system's) gives
// no negative wall time, and no rest outlasts the longest sleep: a rest
// of the jump's length stopped deletion for an hour.
func TestClockJumpsDoNotStopDeletion(t *testing.T) {
	m, _, clk := setup(t, 0)
	m.SetPace(0.25)
	m.cfg.Echo = 1
	m.cfg.Busy = func() bool { return true }
	m.cfg.CPUTime = func() (time.Duration, bool) { return 0, false }
	work := m.startWork()
	clk.Set(clk.Now().Add(-time.Hour))
	if c, w := work(); c != 0 || w != 0 {
		t.Fatalf("work %v over %v across the clock set back an hour, want 0 over 0", c, w)
	}
	longest := time.Duration(m.SleepSecs()) * time.Second
	if got := m.pauseFor(time.Hour, 0); got != longest {
		t.Fatalf("pause %v after an hour's batch, want the longest sleep %v", got, longest)
	}
}

// A batch that waited for a CPU longer than its budget's pause needs no
// further rest; one that ran straight through rests the remainder.
func TestRestCountsWaitingAsPause(t *testing.T) {
	m, _, _ := setup(t, 0)
	m.SetPace(0.25)
	m.cfg.Echo = 1
	m.cfg.Busy = func() bool { return true }
	if got := m.pauseFor(10*time.Millisecond, 40*time.Millisecond); got != 0 {
		t.Fatalf("10ms of CPU (20 with the echo) over 40ms is within half a thread: pause %v", got)
	}
	if got := m.pauseFor(10*time.Millisecond, 15*time.Millisecond); got != 25*time.Millisecond {
		t.Fatalf("pause %v, want the remaining 25ms", got)
	}
}

func TestThreadCPUClockAdvances(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := threadCPU()
	if ok != (runtime.GOOS == "linux") {
		t.Fatalf("thread CPU clock available %v on %s", ok, runtime.GOOS)
	}
	if !ok {
		return // paced by wall time there, which TestWorkIsMeasuredInCPUTime covers
	}
	x := 0
	for i := 0; i < 20_000_000; i++ {
		x += i % 7
	}
	after, _ := threadCPU()
	if after <= before || x == 0 {
		t.Fatalf("thread CPU clock did not advance: %v -> %v", before, after)
	}
}

// waitingBatches makes every batch wait 10ms of wall time using no CPU,
// as a replica set's primary waits for its deletions to commit.
type waitingBatches struct{ clk *clock.Manual }

func (w waitingBatches) BatchStarted(string, string) func(docstore.ExpireResult, error) {
	w.clk.Advance(10 * time.Millisecond)
	return func(docstore.ExpireResult, error) {}
}

// Batches that mostly wait grow, doubling up to GrowBatches times their
// size, so that one wait carries more deletions; without GrowBatches they
// keep their size.
func TestWaitingBatchesGrow(t *testing.T) {
	for _, tc := range []struct {
		grow      int
		subPasses int64
	}{
		{1, 7}, // 10 a batch
		{4, 3}, // 10, 20, 40
	} {
		m, c, clk := setup(t, 0)
		m.cfg.GrowBatches = tc.grow
		m.cfg.CPUTime = func() (time.Duration, bool) { return 0, true }
		m.cfg.Observer = waitingBatches{clk}
		for i := 0; i < 70; i++ {
			add(t, c, i, t0.Add(time.Duration(i)*time.Millisecond))
		}
		clk.Set(t0.Add(time.Second))
		m.Pass(context.Background())
		if st := m.Stats(); st.DeletedDocuments != 70 || st.SubPasses != tc.subPasses {
			t.Fatalf("GrowBatches %d: stats %+v, want 70 deleted in %d sub-passes", tc.grow, st, tc.subPasses)
		}
	}
}

// passCountingRests runs a pass, ending each of its rests by moving clk
// on by rest, and returns how many it took.
func passCountingRests(m *Monitor, clk *clock.Manual, rest time.Duration) int {
	done := make(chan struct{})
	go func() { m.Pass(context.Background()); close(done) }()
	rests := 0
	for {
		select {
		case <-done:
			return rests
		case <-time.After(time.Millisecond):
			if clk.Pending() > 0 {
				clk.Advance(rest)
				rests++
			}
		}
	}
}

// A monitor behind a storm it can outrun deletes without resting until
// it has caught up; behind a burst (documents that expired together) it
// keeps its pace, since no rush would clear that backlog soon.
func TestCatchUpOnlyWhereItClearsTheBacklog(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spacing  time.Duration // between the documents' expiries
		catchUps int64
		rests    int
		raised   []bool // the thread's priority changes
	}{
		{"storm", time.Millisecond, 3, 0, []bool{true}},
		{"burst", 0, 0, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c, clk := setup(t, 0)
			var cpu time.Duration
			m.cfg.CPUTime = func() (time.Duration, bool) { cpu += time.Millisecond; return cpu, true }
			m.cfg.Busy = func() bool { return true }
			var raised []bool
			m.cfg.Priority = func(up bool) bool { raised = append(raised, up); return true }
			for i := 0; i < 30; i++ {
				add(t, c, i, t0.Add(time.Duration(i)*tc.spacing))
			}
			clk.Set(t0.Add(time.Second))
			rests := passCountingRests(m, clk, time.Second)
			if st := m.Stats(); st.DeletedDocuments != 30 || st.CatchUpBatches != tc.catchUps || rests != tc.rests {
				t.Fatalf("stats %+v after %d rests, want 30 deleted with %d batches catching up and %d rests", st, rests, tc.catchUps, tc.rests)
			}
			if !slices.Equal(raised, tc.raised) {
				t.Fatalf("priority changes %v, want %v", raised, tc.raised)
			}
		})
	}
}

// Once catching up, the monitor goes on without resting until a batch's
// oldest document is less than half CatchUpAfter late: a storm its pace
// barely covers is not held at the mark.
func TestCatchingUpGoesOnToHalfTheMark(t *testing.T) {
	for _, tc := range []struct {
		name       string
		secondLate time.Duration // how late the second batch's oldest document is
		catchUps   int64
		rests      int
	}{
		{"second batch back under the mark, above half of it", 90 * time.Millisecond, 2, 1},
		{"second batch below half the mark", 40 * time.Millisecond, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c, clk := setup(t, 0)
			m.SetCatchUpAfter(100 * time.Millisecond) // the mark the cases are written for
			var cpu time.Duration
			m.cfg.CPUTime = func() (time.Duration, bool) { cpu += time.Millisecond; return cpu, true }
			m.cfg.Busy = func() bool { return true }
			now := t0.Add(time.Second)
			for j := range 10 { // three batches of 10, each spanning 9 ms
				ms := time.Duration(j) * time.Millisecond
				add(t, c, j, now.Add(-200*time.Millisecond+ms))
				add(t, c, 10+j, now.Add(-tc.secondLate+ms))
				add(t, c, 20+j, now.Add(-25*time.Millisecond+ms))
			}
			clk.Set(now)
			// A rest lasts 1 ms of CPU, doubled, at a share of 0.6.
			rests := passCountingRests(m, clk, 5*time.Millisecond)
			if st := m.Stats(); st.DeletedDocuments != 30 || st.CatchUpBatches != tc.catchUps || rests != tc.rests {
				t.Fatalf("stats %+v after %d rests, want 30 deleted with %d batches catching up and %d rests", st, rests, tc.catchUps, tc.rests)
			}
		})
	}
}

func TestCatchingUp(t *testing.T) {
	m, _, clk := setup(t, 0)
	m.SetCatchUpAfter(100 * time.Millisecond)
	now := t0.Add(time.Second)
	clk.Set(now)
	at := func(late time.Duration) int64 { return now.Add(-late).UnixNano() }
	for _, tc := range []struct {
		name     string
		catching bool // the batch before caught up
		expiries []int64
		cpu      time.Duration
		want     bool
	}{
		// The default Echo doubles the CPU time.
		{"late, 10ms of expiries deleted with 2.5ms of CPU", false, []int64{at(time.Second), at(990 * time.Millisecond)}, 2500 * time.Microsecond, true},
		{"late, deleted barely faster than they expired", false, []int64{at(time.Second), at(990 * time.Millisecond)}, 4500 * time.Microsecond, false},
		{"late, expired together", false, []int64{at(time.Second), at(time.Second)}, time.Millisecond, false},
		{"on time", false, []int64{at(60 * time.Millisecond), at(50 * time.Millisecond)}, time.Millisecond, false},
		{"on time, catching up: goes on above half the mark", true, []int64{at(60 * time.Millisecond), at(50 * time.Millisecond)}, time.Millisecond, true},
		{"on time, catching up: stops below half the mark", true, []int64{at(45 * time.Millisecond), at(35 * time.Millisecond)}, time.Millisecond, false},
		{"catching up, expired together", true, []int64{at(time.Second), at(time.Second)}, time.Millisecond, false},
		{"one document", false, []int64{at(time.Second)}, 0, false},
	} {
		m.catching = tc.catching
		if got := m.catchingUp(tc.expiries, tc.cpu); got != tc.want {
			t.Errorf("%s: catching up %v, want %v", tc.name, got, tc.want)
		}
	}
	m.catching = false
	m.SetCatchUpAfter(-1)
	if m.catchingUp([]int64{at(time.Second), at(900 * time.Millisecond)}, time.Millisecond) {
		t.Error("catching up while turned off")
	}
}

// The catching-up priority is dropped with the first batch that does not
// catch up, and a system that refuses it is asked again next time.
func TestCatchUpPriorityFollowsTheBatches(t *testing.T) {
	m, _, _ := setup(t, 0)
	var calls []bool
	allow := false
	m.cfg.Priority = func(up bool) bool { calls = append(calls, up); return allow || !up }
	m.raise(true) // refused
	m.raise(false)
	allow = true
	m.raise(true)
	m.raise(true)
	m.raise(false)
	if want := []bool{true, true, false}; !slices.Equal(calls, want) {
		t.Fatalf("priority calls %v, want %v", calls, want)
	}
}

// Scheduler threads are added once a pass has more than a batch to delete
// while clients are busy, and taken back by the pass's end.
func TestThreadsAddedForABacklogUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expired int // BatchDocs is 10
		busy    bool
		threads []bool
	}{
		{"a backlog while clients are busy", 25, true, []bool{true, false}},
		{"a backlog with no client busy", 25, false, nil},
		{"one batch while clients are busy", 5, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c, clk := setup(t, 0)
			m.SetPace(1) // no rests
			m.cfg.Busy = func() bool { return tc.busy }
			var threads []bool
			m.cfg.Threads = func(more bool) { threads = append(threads, more) }
			for i := range tc.expired {
				add(t, c, i, t0)
			}
			clk.Set(t0.Add(time.Second))
			m.Pass(context.Background())
			if got := m.Stats().DeletedDocuments; got != int64(tc.expired) {
				t.Fatalf("deleted %d, want %d", got, tc.expired)
			}
			if !slices.Equal(threads, tc.threads) {
				t.Fatalf("thread changes %v, want %v", threads, tc.threads)
			}
		})
	}
}
