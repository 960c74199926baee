package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// stormIndex is the storm collection's TTL index. It is created with
// parkedTTL, so nothing expires while the documents load, and then set by
// collMod so that the first expiry falls where the run wants it.
const (
	stormIndex = "at_ttl"
	parkedTTL  = 1_000_000 // seconds, about 11.6 days
)

// StormSpec describes an expiry storm.
type StormSpec struct {
	Docs      int           `json:"docs"`       // documents that expire
	Window    time.Duration `json:"window"`     // their expiries, evenly spread over it
	Warmup    time.Duration `json:"warmup"`     // sessions run unmeasured this long first
	Baseline  time.Duration `json:"baseline"`   // then measured this long before the storm
	PollEvery time.Duration `json:"poll_every"` // deletion counter sampling period
	MaxDrain  time.Duration `json:"max_drain"`  // wait at most this long after the last expiry
	// Burst makes every document expire at the same instant, the storm
	// of the pacing target; Window is then how long the session workload
	// is measured from that instant. The collection is "burst", not
	// "storm", so that a burst can follow a storm on one server.
	Burst bool `json:"burst,omitempty"`
	// Shuffled gives the documents _ids in random order to their expiry.
	Shuffled bool `json:"shuffled,omitempty"`
	// Stream opens a change stream of the expiries during the storm:
	// stormStreamOff, or stormStreamPre with pre-images; "" for none.
	Stream string `json:"stream,omitempty"`
	// Neighbours CPU-bound processes (see Spin) run from the moment the
	// server has gone idle after the load to the end of the drain, on the
	// taskset CPU list NeighbourCPUs ("": wherever the kernel puts them).
	Neighbours    int    `json:"neighbours,omitempty"`
	NeighbourCPUs string `json:"neighbour_cpus,omitempty"`
	// CPUProfile, when set, is a file for a CPU profile of the process
	// running the job, from the baseline's start to the storm's end (the
	// load before it left out); profiles use it with the server in process.
	CPUProfile string `json:"cpu_profile,omitempty"`
}

// coll is the storm's collection.
func (sp StormSpec) coll() string {
	if sp.Burst {
		return burstColl
	}
	return stormColl
}

// schedule is when the storm's documents expire.
func (sp StormSpec) schedule() schedule {
	window := sp.Window
	if sp.Burst {
		window = 0
	}
	s := newSchedule(sp.Docs, window)
	s.shuffled = sp.Shuffled
	return s
}

// ExpiryResult is what an expiry storm showed.
type ExpiryResult struct {
	// Server is the build it ran on, where a phase runs more than one
	// (mayfly, mayfly-baseline); "" for mayfly.
	Server        string       `json:"server,omitempty"`
	Docs          int          `json:"docs"`
	WindowSeconds float64      `json:"window_seconds"`
	OfferedPerSec float64      `json:"offered_per_sec"`
	FirstExpiry   time.Time    `json:"first_expiry"`
	Load          LoadResult   `json:"load"`
	Visibility    Visibility   `json:"visibility"`
	Lateness      Lateness     `json:"lateness"`
	AllDeleted    bool         `json:"all_deleted"`
	Baseline      WindowResult `json:"sessions_baseline"`
	Storm         WindowResult `json:"sessions_storm"`
	Mix           MixResult    `json:"sessions_mix"`
	// Burst is set for a burst; SteadyPerSec is then its deletion rate
	// while a backlog remained (see steadyRate).
	Burst        bool    `json:"burst,omitempty"`
	SteadyPerSec float64 `json:"steady_per_sec,omitempty"`
	Shuffled     bool    `json:"shuffled,omitempty"`
	// Events is what a change stream open during the storm received.
	Events *ExpiryEvents `json:"events,omitempty"`
	// Neighbours is how many CPU-bound processes ran beside it, and
	// NeighbourCores how many CPUs they kept busy on average.
	Neighbours     int     `json:"neighbours,omitempty"`
	NeighbourCores float64 `json:"neighbour_cores,omitempty"`
	// Cap is the share of each core the server was capped at
	// (-storm-cap), over the CapCores cores it may run on.
	Cap      float64 `json:"cap,omitempty"`
	CapCores int     `json:"cap_cores,omitempty"`
	// LoadAvg is /proc/loadavg when the drain ended.
	LoadAvg string `json:"loadavg"`
	// CatchUpBatches is how many deletion batches the server's monitor
	// ran without resting, catching up (metrics.ttl.catchUpBatches),
	// between the first and last readings of its deletions.
	CatchUpBatches int64 `json:"catch_up_batches"`
	// Sched is how much CPU the server got from the first expiry until
	// the drain and the visibility reader's last range read ended, and
	// how long its threads waited for a CPU.
	Sched *SchedShare `json:"sched,omitempty"`
}

// SchedShare is a process's CPU over a span, in cores: RunCores is the
// CPU time its threads ran per second, WaitCores the time they spent
// runnable on a run queue, waiting for a CPU someone else held.
type SchedShare struct {
	Seconds   float64 `json:"seconds"`
	RunCores  float64 `json:"run_cores"`
	WaitCores float64 `json:"wait_cores"`
}

func (s *SchedShare) String() string {
	if s == nil {
		return "server CPU unknown"
	}
	return fmt.Sprintf("server ran %.2f cores, waited for a CPU %.2f cores over %.1f s", s.RunCores, s.WaitCores, s.Seconds)
}

// schedFrom starts measuring pid's CPU at from; the returned func ends
// it (nil when pid is unknown or its threads cannot be read).
func schedFrom(ctx context.Context, pid int, from time.Time) func() *SchedShare {
	type reading struct {
		at        time.Time
		run, wait time.Duration
		ok        bool
	}
	start := make(chan reading, 1)
	go func() {
		if pid <= 0 || sleepUntil(ctx, from) != nil {
			start <- reading{}
			return
		}
		run, wait, err := schedTimes(pid)
		start <- reading{at: time.Now(), run: run, wait: wait, ok: err == nil}
	}()
	return func() *SchedShare {
		r0 := <-start
		run, wait, err := schedTimes(pid)
		secs := time.Since(r0.at).Seconds()
		if !r0.ok || err != nil || secs <= 0 {
			return nil
		}
		return &SchedShare{Seconds: secs, RunCores: (run - r0.run).Seconds() / secs, WaitCores: (wait - r0.wait).Seconds() / secs}
	}
}

// stormDoc is a document of the storm collection.
type stormDoc struct {
	ID    int64     `bson:"_id"`
	At    time.Time `bson:"at"`
	Token string    `bson:"token"`
}

// loadStorm creates the storm collection's parked TTL index and inserts
// the scheduled documents.
func loadStorm(ctx context.Context, coll *mongo.Collection, s schedule) (LoadResult, error) {
	start := time.Now()
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetName(stormIndex).SetExpireAfterSeconds(parkedTTL),
	})
	if err != nil {
		return LoadResult{}, fmt.Errorf("storm index: %w", err)
	}
	load, err := insertAll(ctx, coll, s.n, "storm", func(i int) stormDoc {
		return stormDoc{ID: s.id(i), At: s.at(i), Token: token(uint64(i))}
	})
	load.Seconds = time.Since(start).Seconds()
	load.DocsPerSec = float64(s.n) / load.Seconds
	return load, err
}

// armStorm sets the storm index's expireAfterSeconds to the schedule's.
func armStorm(ctx context.Context, db *mongo.Database, coll string, s schedule) error {
	err := db.RunCommand(ctx, bson.D{
		{Key: "collMod", Value: coll},
		{Key: "index", Value: bson.D{
			{Key: "name", Value: stormIndex},
			{Key: "expireAfterSeconds", Value: int64(s.after / time.Second)},
		}},
	}).Err()
	if err != nil {
		return fmt.Errorf("collMod storm index: %w", err)
	}
	return nil
}

// startStormNeighbours starts the storm's neighbour processes, if any.
func startStormNeighbours(sp StormSpec) (*neighbours, error) {
	if sp.Neighbours == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	return startNeighbours(self, sp.Neighbours, sp.NeighbourCPUs)
}

// runExpiryJob loads the storm documents, waits for the server to go
// idle, then runs the session workload
// (over j.Count preloaded sessions) through a baseline and the storm while
// one reader checks that expired documents are invisible and a poller
// samples the deletion counter.
func runExpiryJob(ctx context.Context, j Job) (*ExpiryResult, error) {
	sp := *j.Storm
	probe, err := dialMongo(ctx, j.Addr, loadParallel)
	if err != nil {
		return nil, err
	}
	defer probe.Disconnect(context.WithoutCancel(ctx))
	db := probe.Database(benchDB)
	s := sp.schedule()
	load, err := loadStorm(ctx, db.Collection(sp.coll()), s)
	if err != nil {
		return nil, err
	}
	if j.ServerPID > 0 {
		if _, err := waitIdle(ctx, j.ServerPID, settleLimit); err != nil {
			return nil, err
		}
	}
	nb, err := startStormNeighbours(sp)
	if err != nil {
		return nil, err
	}
	defer nb.stop()
	st, err := newMongoStore(ctx, j.Addr, j.Clients)
	if err != nil {
		return nil, err
	}
	defer st.close(context.WithoutCancel(ctx))

	first := s.startAtOrAfter(time.Now().Add(sp.Warmup + sp.Baseline))
	base := span{first.Add(-sp.Baseline), first}
	storm := span{first, first.Add(sp.Window)}
	deadline := storm.to.Add(sp.MaxDrain)
	events, err := startExpiryStream(ctx, probe, sp, int64(s.n), deadline)
	if err != nil {
		return nil, err
	}
	if err := armStorm(ctx, db, sp.coll(), s); err != nil {
		return nil, err
	}

	var (
		wg         sync.WaitGroup
		samples    []ttlSample
		vis        Visibility
		perr, verr error
	)
	stopProfile, err := startCPUProfile(sp.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	stop := make(chan struct{})
	sched := schedFrom(ctx, j.ServerPID, storm.from)
	wg.Go(func() {
		defer close(stop)
		samples, perr = pollDeleted(ctx, db, sp.PollEvery, base.from, deadline, int64(s.n))
	})
	wg.Go(func() {
		vis, verr = watchVisibility(ctx, db.Collection(sp.coll()), s, base.from, storm.to, deadline, stop)
	})
	spec := mixSpec{clients: j.Clients, preloaded: j.Count, runID: j.RunID}
	rec, mix, _ := runMix(ctx, st, spec, []span{base, storm}, storm.to)
	stopProfile()
	wg.Wait()
	share := sched()
	if perr != nil {
		return nil, perr
	}
	if verr != nil {
		return nil, verr
	}
	ev, err := events()
	if err != nil {
		return nil, err
	}
	lat := deletionLateness(samples, s)
	var cores float64
	if nb != nil {
		cores = nb.cores()
	}
	return &ExpiryResult{Events: ev, Neighbours: sp.Neighbours, NeighbourCores: cores, LoadAvg: loadAvg(), Sched: share,
		Docs: s.n, WindowSeconds: sp.Window.Seconds(), OfferedPerSec: float64(s.n) / sp.Window.Seconds(), FirstExpiry: first,
		Load: load, Visibility: vis, Lateness: lat, AllDeleted: lat.Deleted == int64(s.n),
		Baseline: rec.result(0), Storm: rec.result(1), Mix: mix,
		Burst: sp.Burst, SteadyPerSec: steadyRate(samples, int64(s.n)), Shuffled: sp.Shuffled,
		CatchUpBatches: catchUpsOver(samples),
	}, checkMix(rec.hists[0].Count(), mix)
}

// catchUpsOver is how many batches the monitor ran catching up between
// the first and last of samples.
func catchUpsOver(samples []ttlSample) int64 {
	if len(samples) < 2 {
		return 0
	}
	return samples[len(samples)-1].catchUps - samples[0].catchUps
}
