// Package ttl runs the TTL monitor: the background loop that deletes
// documents whose TTL index says they have expired.
//
// Unlike MongoDB's monitor, which polls once a minute, it reads the next
// expiry from the TTL indexes themselves and sleeps until then (never
// longer than ttlMonitorSleepSecs, never shorter than a floor that keeps
// batches efficient). Deletes go through the docstore's normal delete path
// in bounded batches, so indexes and counters stay exact.
package ttl

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// Config tunes the monitor. The zero value is valid.
type Config struct {
	// SleepSecs is ttlMonitorSleepSecs: the longest the monitor sleeps
	// between passes when it knows of no expiry (default 60).
	SleepSecs int64
	// Floor is the shortest time from the start of one pass to the start
	// of the next (default 15 ms), kept while passes carry a batch or
	// more; passes that carry less start further apart, up to
	// trickleFloor (see floor). A document that expires just after a pass
	// began waits for the next one: through a steady storm that is half
	// the floor at the median, and at 50 ms it was most of a document's
	// lateness (docs/design/0003, "The monitor").
	Floor time.Duration
	// BatchDocs bounds the documents deleted in one atomic batch (default
	// 1000), or ScatteredBatches times as many after a batch whose
	// documents were scattered (docstore.ExpireResult.Scattered).
	BatchDocs int
	// ScatteredBatches multiplies BatchDocs after a scattered batch
	// (default 4). Documents expiring in random _id order, as sessions
	// touched at random do, cost 4.2 µs each in batches of 1000 and 2.8 in
	// batches of 4000 (each deletion lands nearer the previous one in the
	// memtable), while in _id order the size makes no difference and
	// smaller batches hold the collection's locks for less time.
	ScatteredBatches int
	// GrowBatches caps how many times its size a batch may grow to when
	// batches spend most of their time waiting rather than working, as a
	// replica set's primary waits for each deletion batch to commit: after
	// such a batch, a pass with more to do doubles its batch, so that one
	// commit's wait carries more deletions. Default 1 (no growth).
	GrowBatches int
	// Disabled starts the monitor with ttlMonitorEnabled false.
	Disabled bool
	// Active, when set, reports whether this server may delete now: in a
	// replica set only the primary's monitor deletes, and the others
	// apply its deletions (kick the monitor when it becomes true).
	Active func() bool
	Logger *slog.Logger
	// Observer, when set, hears about every deletion batch.
	Observer Observer
	// Busy, when set, reports whether clients have requests in flight; the
	// monitor then paces itself (see Pace).
	Busy func() bool
	// Pace is the share of the server's CPU time (CPUs cores) the monitor
	// may spend deleting while clients are busy; being one goroutine it
	// never takes more than one core. After a batch that used CPU time d
	// it rests so that batch and rest last d·(1+Echo)/s, where
	// s = min(1, Pace·CPUs). Default 0.3: an expiry storm takes at most 30 % of the
	// server from foreground requests (0.6 of a core on two cores, the
	// monitor's own share half of that with the default Echo); with no
	// client busy it deletes flat out.
	Pace float64
	// CPUs is the number of cores the server runs on; default GOMAXPROCS.
	CPUs int
	// Echo is the work the storage engine does later for each unit of
	// the monitor's own: flushing the deletion tombstones, compacting
	// them away, writing the WAL, collecting the garbage. Pacing counts a
	// batch as its CPU time times 1+Echo. Default 1 (measured about 0.6–1
	// under the benchmark's burst: see docs/design/0003).
	Echo float64
	// CPUTime measures the CPU time the monitor's goroutine has used (ok
	// false: unknown, and the monitor paces by wall time). Default: the
	// clock of the OS thread Run locks itself to. Wall time would count
	// the time a batch waited for a CPU while requests ran, and so rest
	// twice for the same yield.
	CPUTime func() (d time.Duration, ok bool)
	// CatchUpAfter is how late a batch's oldest document may be before the
	// monitor stops resting to catch up, which it does only when the
	// batch's documents expired more slowly than it can delete them, until
	// a batch's oldest is less than half as late (see catchingUp). Default
	// 50 ms: a storm the pace barely covers drifts up to the mark before
	// the monitor catches up, so the mark sets the storm's lateness p99,
	// well inside the 250 ms its deletions are held to; negative turns
	// catching up off.
	CatchUpAfter time.Duration
	// Priority raises (up) the priority of the monitor's thread while it
	// catches up, and sets it back; it reports whether it could. Default:
	// the OS thread's nice value (Linux, where the system allows it).
	Priority func(up bool) bool
	// Threads adds scheduler threads (more) while a pass's sub-passes leave
	// more to delete with clients busy, and takes them back after the first
	// sub-pass that does not (at the latest when the pass ends). With one per core, Go's default and the cheapest for requests,
	// the monitor's batches and the compactions they cause hold the
	// threads for milliseconds at a stretch while requests wait for Go's
	// preemption (10 ms); with more threads than cores the kernel shares
	// the cores at a finer grain, and honours the thread priority of a
	// monitor catching up. Default: none added.
	Threads func(more bool)
}

// Observer is told when a deletion batch starts and how it ended, so the
// monitor's work shows in currentOp and the profiler.
type Observer interface {
	BatchStarted(ns, index string) (done func(res docstore.ExpireResult, err error))
}

// Stats are the counters of serverStatus().metrics.ttl.
type Stats struct {
	Passes, SubPasses, DeletedDocuments, DeletedKeys int64
	// CatchUpBatches counts the batches after which the monitor did not
	// rest because it was catching up (see Config.CatchUpAfter).
	CatchUpBatches int64
}

// Monitor is the TTL deletion loop.
type Monitor struct {
	store  *docstore.Store
	clock  clock.Clock
	cfg    Config
	logger *slog.Logger

	enabled   atomic.Bool
	sleepSecs atomic.Int64
	kick      chan struct{}
	// wakeAt is when the current sleep ends (unix nanoseconds); a write
	// that expires earlier kicks the monitor.
	wakeAt atomic.Int64
	pace   atomic.Uint64 // math.Float64bits of the current Pace
	// catchUpAfter is the current CatchUpAfter (nanoseconds; negative: off).
	catchUpAfter atomic.Int64
	// lastPass is when the latest pass started (unix nanoseconds).
	lastPass atomic.Int64
	// lastDocs is how many documents the latest pass deleted, and
	// lastGap the time from the start of the pass before it to its own;
	// only the monitor's goroutine reads and writes them.
	lastDocs int64
	lastGap  time.Duration

	passes, subPasses, deletedDocs, deletedKeys atomic.Int64
	// catchUps counts the batches after which the monitor did not rest
	// because it was catching up.
	catchUps atomic.Int64
	// catching says the last batch caught up, raised that the monitor's
	// thread runs at the catching-up priority, threadsAdded that
	// Config.Threads added scheduler threads for a backlog; only the
	// monitor's goroutine reads and writes them.
	catching, raised, threadsAdded bool
}

// New returns a monitor over store; Run starts it.
func New(store *docstore.Store, clk clock.Clock, cfg Config) *Monitor {
	if cfg.SleepSecs <= 0 {
		cfg.SleepSecs = 60
	}
	if cfg.Floor <= 0 {
		cfg.Floor = 15 * time.Millisecond
	}
	if cfg.BatchDocs <= 0 {
		cfg.BatchDocs = 1000
	}
	if cfg.ScatteredBatches <= 0 {
		cfg.ScatteredBatches = 4
	}
	if cfg.GrowBatches <= 0 {
		cfg.GrowBatches = 1
	}
	if cfg.Pace <= 0 || cfg.Pace > 1 {
		cfg.Pace = 0.3
	}
	if cfg.Echo <= 0 {
		cfg.Echo = 1
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = runtime.GOMAXPROCS(0)
	}
	if cfg.CatchUpAfter == 0 {
		cfg.CatchUpAfter = 50 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CPUTime == nil {
		cfg.CPUTime = threadCPU
	}
	if cfg.Priority == nil {
		cfg.Priority = threadPriority
	}
	m := &Monitor{store: store, clock: clk, cfg: cfg, logger: cfg.Logger, kick: make(chan struct{}, 1)}
	m.enabled.Store(!cfg.Disabled)
	m.sleepSecs.Store(cfg.SleepSecs)
	m.SetPace(cfg.Pace)
	m.SetCatchUpAfter(cfg.CatchUpAfter)
	store.OnIndexChange(m.Kick)
	store.OnExpiry(m.hint)
	return m
}

// Kick makes the monitor re-plan its next wake-up now.
func (m *Monitor) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Monitor) hint(at time.Time) {
	if at.UnixNano() < m.wakeAt.Load() {
		m.Kick()
	}
}

// Enabled reports ttlMonitorEnabled.
func (m *Monitor) Enabled() bool { return m.enabled.Load() }

// SetEnabled sets ttlMonitorEnabled.
func (m *Monitor) SetEnabled(on bool) { m.enabled.Store(on); m.Kick() }

// SleepSecs reports ttlMonitorSleepSecs.
func (m *Monitor) SleepSecs() int64 { return m.sleepSecs.Load() }

// SetSleepSecs sets ttlMonitorSleepSecs and re-plans the current sleep.
func (m *Monitor) SetSleepSecs(n int64) { m.sleepSecs.Store(n); m.Kick() }

// Pace reports the share of the server's CPU time deletion may use while
// clients are busy (mayflyTTLDeletePace).
func (m *Monitor) Pace() float64 { return math.Float64frombits(m.pace.Load()) }

// SetPace sets the share of the server's CPU time deletion may use while
// clients are busy, in (0, 1].
func (m *Monitor) SetPace(p float64) { m.pace.Store(math.Float64bits(p)) }

// CatchUpAfter reports how late a batch's oldest document may be before
// the monitor catches up (negative: it never does); see
// Config.CatchUpAfter.
func (m *Monitor) CatchUpAfter() time.Duration { return time.Duration(m.catchUpAfter.Load()) }

// SetCatchUpAfter sets how late a batch's oldest document may be before
// the monitor catches up; negative turns catching up off.
func (m *Monitor) SetCatchUpAfter(d time.Duration) { m.catchUpAfter.Store(int64(d)) }

// Stats returns the monitor's counters.
func (m *Monitor) Stats() Stats {
	return Stats{
		Passes: m.passes.Load(), SubPasses: m.subPasses.Load(),
		DeletedDocuments: m.deletedDocs.Load(), DeletedKeys: m.deletedKeys.Load(),
		CatchUpBatches: m.catchUps.Load(),
	}
}

// Run loops until ctx is done. It keeps its goroutine on one OS thread so
// that the thread's CPU clock measures the monitor's work for pacing.
func (m *Monitor) Run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer m.raise(false) // the thread goes back to Go's pool as it came
	timer := m.clock.NewTimer(m.nextWait())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-timer.C():
			if m.enabled.Load() && (m.cfg.Active == nil || m.cfg.Active()) {
				m.Pass(ctx)
			}
		}
		timer.Reset(m.nextWait())
	}
}

// nextWait is the time until the earliest known expiry, at most
// SleepSecs, and no sooner than Floor after the previous pass started.
func (m *Monitor) nextWait() time.Duration {
	longest := time.Duration(m.sleepSecs.Load()) * time.Second
	// A monitor that may not delete (a secondary's) has no expiry to wait
	// for: planning one would find the earliest already due, wake at once
	// and plan again, a busy loop over the index's first entries for as
	// long as the primary's deletions of them take to arrive (a third of
	// the set's CPU in a storm). Promotion kicks it.
	if !m.enabled.Load() || m.cfg.Active != nil && !m.cfg.Active() {
		return longest
	}
	now := m.clock.Now()
	wait := longest
	for _, c := range m.store.Collections() {
		if !c.HasTTL() {
			continue
		}
		at, ok, err := c.NextExpiry()
		if err != nil {
			m.logger.Warn("ttl: reading next expiry", "ns", c.Namespace(), "err", err)
			continue
		}
		if ok && at.Sub(now) < wait {
			wait = at.Sub(now)
		}
	}
	sinceLast := max(now.Sub(time.Unix(0, m.lastPass.Load())), 0) // a clock set back
	wait = max(wait, m.floor()-sinceLast, 0)
	m.wakeAt.Store(now.Add(wait).UnixNano())
	return wait
}

// Pass deletes everything expired as of the pass's start, visiting TTL
// indexes round-robin one batch at a time so that no collection starves
// another.
func (m *Monitor) Pass(ctx context.Context) {
	now := m.clock.Now()
	m.lastGap = max(now.Sub(time.Unix(0, m.lastPass.Load())), 0)
	m.lastPass.Store(now.UnixNano())
	deleted := m.deletedDocs.Load()
	defer func() { m.lastDocs = m.deletedDocs.Load() - deleted }()
	work := m.ttlIndexes(now)
	for len(work) > 0 && ctx.Err() == nil {
		m.subPasses.Add(1)
		work = m.subPass(ctx, work)
		m.addThreads(len(work) > 0 && m.cfg.Busy != nil && m.cfg.Busy())
	}
	m.addThreads(false)
	m.passes.Add(1)
}

// trickleFloor is the longest floor: the time between passes while each
// carries less than a batch.
const trickleFloor = 50 * time.Millisecond

// floor is the shortest time from the start of the latest pass to the
// next: the time in which a batch's worth of documents expired at the
// latest pass's rate, between Floor and trickleFloor. Each pass has a
// fixed cost (planning, its commit, waking the thread): with passes 15 ms
// apart a trickle of 1,000 expiries a second took about twice the
// server's CPU it took at 50 ms, while a storm's passes carry a batch or
// more and keep the short floor (docs/design/0003, "The monitor").
func (m *Monitor) floor() time.Duration {
	longest := max(m.cfg.Floor, trickleFloor)
	if m.lastDocs <= 0 {
		return longest
	}
	perBatch := time.Duration(float64(m.lastGap) * float64(m.cfg.BatchDocs) / float64(m.lastDocs))
	return min(max(perBatch, m.cfg.Floor), longest)
}

// rest pauses after a batch that used cpu over wall time while clients are
// busy, so that deletion, with the storage work it causes, uses at most
// the Pace share of the server's CPU time: batch and pause together last
// cpu·(1+Echo)/share. Time the batch spent waiting for a CPU while
// requests ran already counts as pause.
func (m *Monitor) rest(ctx context.Context, cpu, wall time.Duration) {
	pause := m.pauseFor(cpu, wall)
	if pause <= 0 {
		return
	}
	t := m.clock.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// pauseFor is the rest after a batch that used cpu over wall time.
func (m *Monitor) pauseFor(cpu, wall time.Duration) time.Duration {
	share := min(1, m.Pace()*float64(m.cfg.CPUs))
	if m.cfg.Busy == nil || share >= 1 || !m.cfg.Busy() {
		return 0
	}
	// Never longer than the monitor's longest sleep: a batch measured
	// across a jump of the clock (the test clock moved, or the system's
	// set) must not stop deletion for the jump's length.
	longest := time.Duration(m.sleepSecs.Load()) * time.Second
	return min(max(time.Duration(float64(cpu)*(1+m.cfg.Echo)/share)-wall, 0), longest)
}

// catchUpMargin is how much faster than its documents expired a batch
// must delete them, at its cost, for the monitor to catch up: the
// backlog then shrinks by at least a fifth of the deletion rate.
const catchUpMargin = 1.25

// catchingUp reports whether the monitor should go on without resting,
// at a raised priority, after a batch that cost cpu (its thread's CPU
// time) to delete documents of the given expiries (unix nanoseconds). It
// should when the oldest is more than CatchUpAfter late (half that once
// catching up: a monitor that stopped as soon as it was back under the
// mark would rest its way straight back over it, and a storm its pace
// barely covers would be held at the mark for as long as it lasts) and
// the span of expiry time the batch covers is over catchUpMargin times
// the batch's cost with its echo: documents that expire more slowly than
// the monitor deletes them once it gets the CPU, as in a steady storm it
// fell behind while requests held the cores, so deleting flat out clears
// the backlog in a bounded time and then the pace applies again.
// Documents that expired together (a burst: a span of nothing) or faster
// than the monitor could delete them leave a backlog that no rush would
// clear soon, and the pace keeps the foreground's share of the CPU.
func (m *Monitor) catchingUp(expiries []int64, cpu time.Duration) bool {
	after := m.CatchUpAfter()
	if after < 0 || len(expiries) < 2 {
		return false
	}
	if m.catching {
		after /= 2
	}
	oldest, newest := slices.Min(expiries), slices.Max(expiries)
	if m.clock.Now().UnixNano()-oldest <= int64(after) {
		return false
	}
	return float64(newest-oldest) > catchUpMargin*float64(cpu)*(1+m.cfg.Echo)
}

// raise sets the monitor's thread to the catching-up priority (up) or
// back, when it is not there already.
func (m *Monitor) raise(up bool) {
	if up == m.raised {
		return
	}
	if m.cfg.Priority(up) || !up {
		m.raised = up
	}
}

// addThreads asks for the scheduler threads of a backlog (more) or gives
// them back, when they are not so already.
func (m *Monitor) addThreads(more bool) {
	if more != m.threadsAdded && m.cfg.Threads != nil {
		m.cfg.Threads(more)
		m.threadsAdded = more
	}
}

// startWork starts measuring a batch; the returned func gives the CPU time
// it used (its wall time when CPU time is unknown) and its wall time.
func (m *Monitor) startWork() func() (cpu, wall time.Duration) {
	wallStart := m.clock.Now()
	cpuStart, cpuOK := m.cfg.CPUTime()
	return func() (cpu, wall time.Duration) {
		wall = max(m.clock.Now().Sub(wallStart), 0) // a clock set back
		if cpuEnd, ok := m.cfg.CPUTime(); cpuOK && ok {
			return cpuEnd - cpuStart, wall
		}
		return wall, wall
	}
}

type target struct {
	coll  *docstore.Collection
	index string
	pass  *docstore.ExpiryPass
	// scattered says the last batch's documents were scattered.
	scattered bool
	// grow multiplies the batch size after batches that mostly waited.
	grow int
}

// batchDocs is the size of t's next batch.
func (m *Monitor) batchDocs(t target) int {
	n := m.cfg.BatchDocs * max(t.grow, 1)
	if t.scattered {
		return n * m.cfg.ScatteredBatches
	}
	return n
}

// grown is the growth of t's batches after one that used cpu over wall.
func (m *Monitor) grown(t target, cpu, wall time.Duration) int {
	g := max(t.grow, 1)
	if wall > 2*cpu {
		g = min(2*g, m.cfg.GrowBatches)
	}
	return max(g, 1)
}

func (m *Monitor) ttlIndexes(now time.Time) []target {
	var out []target
	for _, c := range m.store.Collections() {
		for _, name := range c.TTLIndexes() {
			out = append(out, target{coll: c, index: name, pass: c.BeginExpiry(name, now)})
		}
	}
	return out
}

func (m *Monitor) expireBatch(t target) (docstore.ExpireResult, error) {
	if m.cfg.Observer == nil {
		return t.pass.Next(m.batchDocs(t))
	}
	done := m.cfg.Observer.BatchStarted(t.coll.Namespace(), t.index)
	res, err := t.pass.Next(m.batchDocs(t))
	if err == nil && res.Applied != nil {
		// In flight: the observer hears of it once it is applied.
		go func() { done(res, res.Applied()) }()
		return res, nil
	}
	done(res, err)
	return res, err
}

// subPass runs one batch per index and returns the indexes with more to do.
func (m *Monitor) subPass(ctx context.Context, work []target) []target {
	var again []target
	for _, t := range work {
		work := m.startWork()
		res, err := m.expireBatch(t)
		cpu, wall := work()
		// A batch still in flight (a replica set primary's) has cost the
		// monitor only its proposal, not the deletions every member makes
		// when it applies: without rests the monitor would take the
		// machine from the clients (their w:"majority" inserts during a
		// storm went from 2.3 to 178 ms at the median, docs/design/0007).
		catchUp := res.Applied == nil && m.catchingUp(res.Expiries, cpu)
		m.catching = catchUp
		m.raise(catchUp)
		if catchUp {
			m.catchUps.Add(1)
		} else {
			m.rest(ctx, cpu, wall)
		}
		if err != nil {
			m.logger.Error("Error running TTL job on collection", "ns", t.coll.Namespace(), "index", t.index, "err", err)
			continue
		}
		m.deletedDocs.Add(int64(res.Deleted))
		m.deletedKeys.Add(int64(res.DeletedKeys))
		if res.More {
			t.scattered = res.Scattered
			t.grow = m.grown(t, cpu, wall)
			again = append(again, t)
		}
	}
	return again
}
