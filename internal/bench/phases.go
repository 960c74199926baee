package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mayflydb/mayfly/internal/cpucap"
)

// Names of the session targets.
const (
	nameMayfly = "mayfly"
	// nameBaseline is the previous build of Mayfly (-baseline-bin).
	nameBaseline = "mayfly-baseline"
	nameRedis    = "redis"
	nameNull     = "null"
	// nameMayflyAuth is Mayfly with --auth, its clients logged in.
	nameMayflyAuth = "mayfly-auth"
	// nameMayflyStreams is Mayfly with change streams open on the sessions
	// collection while the workload runs.
	nameMayflyStreams = "mayfly-streams"
	// nameMayflyNoStreams is Mayfly measured beside it without them.
	nameMayflyNoStreams = "mayfly-no-streams"
)

// modeRun runs the phases of one mode. Servers go on serverCPU and client
// children on clientCPU; -1 leaves them unpinned.
type modeRun struct {
	cfg       *Config
	mode      string
	mayflyBin string
	work      string // this mode's directory
	serverCPU int
	clientCPU int
	runs      int // numbers the jobs, so their new sessions never collide
}

func (m *modeRun) logf(format string, args ...any) {
	fmt.Fprintf(m.cfg.Log, "[%s] "+format+"\n", append([]any{m.mode}, args...)...)
}

func (m *modeRun) job(ctx context.Context, j Job) (*JobResult, error) {
	m.runs++
	j.RunID = m.runs
	return runChild(ctx, m.cfg, m.clientCPU, j)
}

// start starts a fresh server of the given kind with its own directory,
// in the control group g when it is not nil.
func (m *modeRun) start(ctx context.Context, kind string, g *cpucap.Group) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := mkdir(m.work, kind)
	if err != nil {
		return nil, err
	}
	var argv []string
	switch kind {
	case nameMayfly, nameMayflyStreams, nameMayflyNoStreams:
		argv = mayflyArgv(m.mayflyBin, addr, filepath.Join(dir, "data"))
	case nameRedis:
		if argv, err = redisArgv(m.cfg.RedisBin, addr, dir); err != nil {
			return nil, err
		}
	case nameNull:
		argv = nullArgv(m.cfg.Self, addr)
	case nameBaseline:
		argv = mayflyArgv(m.cfg.BaselineBin, addr, filepath.Join(dir, "data"))
	case nameMayflyAuth:
		argv = append(mayflyArgv(m.mayflyBin, addr, filepath.Join(dir, "data")), "--auth")
	}
	argv = pinned(m.serverCPU, argv)
	if g != nil {
		argv = g.Wrap(argv)
	}
	s, err := startServer(ctx, kind, argv, addr, filepath.Join(dir, kind+".log"))
	if err == nil && kind == nameMayflyAuth {
		err = withBenchUser(ctx, s)
	}
	return s, err
}

// serverCores is how many cores a server may run on: one pinned, every
// core of the machine shared.
func (m *modeRun) serverCores() int {
	if m.serverCPU >= 0 {
		return 1
	}
	return runtime.NumCPU()
}

// withServer starts a server, runs fn, and stops it, reporting the first
// error.
func (m *modeRun) withServer(ctx context.Context, kind string, fn func(*server) error) error {
	return m.withServerIn(ctx, kind, nil, fn)
}

// withServerIn is withServer with the server in the control group g, when
// it is not nil.
func (m *modeRun) withServerIn(ctx context.Context, kind string, g *cpucap.Group, fn func(*server) error) error {
	s, err := m.start(ctx, kind, g)
	if err != nil {
		return err
	}
	err = fn(s)
	return errors.Join(err, s.stop())
}

// withLoadedPair starts a server of each kind, preloads the sessions into
// both, and runs fn with them, so that rounds alternating between the two
// compare runs seconds apart rather than servers started minutes apart.
func (m *modeRun) withLoadedPair(ctx context.Context, a, b string, fn func(sa, sb *server) error) error {
	return m.withServer(ctx, a, func(sa *server) error {
		return m.withServer(ctx, b, func(sb *server) error {
			for _, s := range []*server{sa, sb} {
				if _, err := m.load(ctx, s, targetMongo, m.cfg.Sizes.Sessions); err != nil {
					return err
				}
			}
			return fn(sa, sb)
		})
	})
}

// settleLimit bounds the wait for a server to go idle after a preload.
const settleLimit = 15 * time.Second

// load preloads n sessions into s, then waits for s to go idle, so that
// flushing and compacting the preload is not billed to the run after it.
func (m *modeRun) load(ctx context.Context, s *server, target string, n int) (*LoadResult, error) {
	res, err := m.job(ctx, Job{Kind: jobLoad, Target: target, Addr: s.dialAddr(), Count: n})
	if err != nil {
		return nil, err
	}
	idle, err := waitIdle(ctx, s.pid(), settleLimit)
	if err != nil {
		return nil, err
	}
	m.logf("%s: loaded %d sessions in %.1fs, idle %.1fs later", s.name, n, res.Load.Seconds, idle.Seconds())
	return res.Load, nil
}

func targetOf(kind string) string {
	if kind == nameRedis {
		return targetRedis
	}
	return targetMongo
}

// sessionRoundKinds is the order of the session rounds on the servers the
// session targets compare: Mayfly, Mayfly --auth and the null server, two
// rounds each in a palindrome (ABCCBA), so that a steady drift of the
// machine weighs on each alike and Mayfly's first round, whose cache is
// still cold, has a match in --auth's. One run of each on servers started
// minutes apart moved the --auth ratio between 0.83 and 1.13.
func sessionRoundKinds() []string {
	return []string{nameMayfly, nameMayflyAuth, nameNull, nameNull, nameMayflyAuth, nameMayfly}
}

// sessionsPhase runs the session workload against Redis once, then
// against Mayfly, Mayfly --auth and the null server in rounds on servers
// started and loaded together (sessionRoundKinds). Each of those three's
// figures is the median of its rounds (mergeRounds). The previous build is
// measured apart, in rounds alternating with this one's (baseline.go).
func (m *modeRun) sessionsPhase(ctx context.Context) (map[string]*SessionsResult, []*SessionsResult, error) {
	out := map[string]*SessionsResult{}
	err := m.withServer(ctx, nameRedis, func(s *server) error {
		if _, err := m.load(ctx, s, targetRedis, m.cfg.Sizes.Sessions); err != nil {
			return err
		}
		res, err := m.sessionsRun(ctx, s, targetRedis, 0)
		out[nameRedis] = res
		return err
	})
	if err != nil {
		return out, nil, fmt.Errorf("sessions on %s: %w", nameRedis, err)
	}
	rounds, err := m.sessionRounds(ctx)
	for _, kind := range []string{nameMayfly, nameMayflyAuth, nameNull} {
		if r := mergeRounds(rounds, kind); r != nil {
			out[kind] = r
		}
	}
	return out, rounds, err
}

// sessionRounds runs sessionRoundKinds on a Mayfly and a Mayfly --auth
// loaded together and a null server, each round's result marked with its
// server.
func (m *modeRun) sessionRounds(ctx context.Context) ([]*SessionsResult, error) {
	var out []*SessionsResult
	err := m.withLoadedPair(ctx, nameMayfly, nameMayflyAuth, func(plain, auth *server) error {
		return m.withServer(ctx, nameNull, func(null *server) error {
			servers := map[string]*server{nameMayfly: plain, nameMayflyAuth: auth, nameNull: null}
			for _, kind := range sessionRoundKinds() {
				res, err := m.sessionsRun(ctx, servers[kind], targetMongo, 0)
				if err != nil {
					return fmt.Errorf("sessions on %s: %w", kind, err)
				}
				res.Server = kind
				out = append(out, res)
			}
			return nil
		})
	})
	return out, err
}

// mergeRounds is the result of server's rounds: each figure the median of
// its rounds (the mean of two), counts summed, the longest latency the
// longest of any; nil when it has none.
func mergeRounds(rounds []*SessionsResult, server string) *SessionsResult {
	var mine []*SessionsResult
	for _, r := range rounds {
		if r.Server == server {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	of := func(f func(*SessionsResult) float64) float64 {
		xs := make([]float64, len(mine))
		for i, r := range mine {
			xs[i] = f(r)
		}
		return median(xs)
	}
	out := *mine[0]
	out.Mix = MixResult{Ops: map[string]int64{}}
	out.Seconds, out.Latency.Count, out.Latency.MaxMs = 0, 0, 0
	for _, r := range mine {
		out.Seconds += r.Seconds
		out.Latency.Count += r.Latency.Count
		out.Latency.MaxMs = max(out.Latency.MaxMs, r.Latency.MaxMs)
		out.Mix.add(r.Mix)
	}
	out.OpsPerSec = of(func(r *SessionsResult) float64 { return r.OpsPerSec })
	out.Latency.MeanMs = of(func(r *SessionsResult) float64 { return r.Latency.MeanMs })
	out.Latency.P50Ms = of(func(r *SessionsResult) float64 { return r.Latency.P50Ms })
	out.Latency.P99Ms = of(func(r *SessionsResult) float64 { return r.Latency.P99Ms })
	out.ServerCPUPerOpUs = of(func(r *SessionsResult) float64 { return r.ServerCPUPerOpUs })
	out.ClientCPUPerOpUs = of(func(r *SessionsResult) float64 { return r.ClientCPUPerOpUs })
	return &out
}

// streamRoundStreams are the change streams open in each of the streams
// rounds, n standing for the configured number: twice without, with,
// with, without, so that a drift of the machine over the rounds weighs
// on both sides alike. Four rounds a side, not two: a round's rate moves
// by a tenth or more from one to the next on a shared machine, more than
// the difference measured.
func streamRoundStreams(n int) []int { return []int{0, n, n, 0, 0, n, n, 0} }

// streamRounds measures the session workload with change streams open
// against the same workload without them, in rounds one after the other
// on two servers started and loaded together: one that never sees a
// stream (its change log stays off, as on a server nobody watches) and
// one whose rounds open them. The ratio is then of runs seconds apart on
// the same machine rather than of servers started minutes apart.
func (m *modeRun) streamRounds(ctx context.Context) ([]*SessionsResult, error) {
	var out []*SessionsResult
	err := m.withLoadedPair(ctx, nameMayflyNoStreams, nameMayflyStreams, func(without, with *server) error {
		for _, streams := range streamRoundStreams(m.cfg.Sizes.Streams) {
			s := without
			if streams > 0 {
				s = with
			}
			res, err := m.sessionsRun(ctx, s, targetMongo, streams)
			if err != nil {
				return err
			}
			out = append(out, res)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("sessions with streams: %w", err)
	}
	return out, nil
}

// sessionsRun runs the session workload once against s, with that many
// change streams open on the sessions collection.
func (m *modeRun) sessionsRun(ctx context.Context, s *server, target string, streams int) (*SessionsResult, error) {
	return m.sessionsRunClients(ctx, s, target, streams, m.cfg.Sizes.Clients)
}

// sessionsRunClients is sessionsRun from the given number of clients.
func (m *modeRun) sessionsRunClients(ctx context.Context, s *server, target string, streams, clients int) (*SessionsResult, error) {
	return m.sessionsJob(ctx, s, Job{Kind: jobSessions, Target: target, Addr: s.dialAddr(), ServerPID: s.pid(),
		Clients: clients, Streams: streams})
}

// sessionsJob runs j, a sessions job on s, at the run's sizes.
func (m *modeRun) sessionsJob(ctx context.Context, s *server, j Job) (*SessionsResult, error) {
	sz := m.cfg.Sizes
	j.Count, j.Warmup, j.Duration = sz.Sessions, sz.Warmup, sz.Duration
	streams := j.Streams
	res, err := m.job(ctx, j)
	if err != nil {
		return nil, err
	}
	r := res.Sessions
	m.logf("sessions on %s, %d streams: %.0f ops/s, p50 %.2f ms, p99 %.2f ms", s.name, streams,
		r.OpsPerSec, r.Latency.P50Ms, r.Latency.P99Ms)
	if st := r.Streams; st != nil {
		m.logf("%d streams: %d-%d events each of %d writes, lag p50 %.1f ms, p99 %.1f ms, %d getMores",
			st.Streams, st.MinEvents, st.MaxEvents, st.Writes, st.Lag.P50Ms, st.Lag.P99Ms, st.GetMore)
	}
	return r, nil
}

// DurableReport is the durable-writes phase.
type DurableReport struct {
	Fsync *FsyncResult     `json:"fsync"`
	Runs  []*DurableResult `json:"runs"`
}

// find returns the run with that many clients and journal setting.
func (d *DurableReport) find(clients int, journal bool) *DurableResult {
	if d == nil {
		return nil
	}
	for _, r := range d.Runs {
		if r.Clients == clients && r.Journal == journal {
			return r
		}
	}
	return nil
}

// durablePhase measures the disk's raw fsync rate in Mayfly's data
// directory, then inserts without and with j: true from each client count.
func (m *modeRun) durablePhase(ctx context.Context) (*DurableReport, error) {
	out := &DurableReport{}
	sz := m.cfg.Sizes
	err := m.withServer(ctx, nameMayfly, func(s *server) error {
		res, err := m.job(ctx, Job{Kind: jobFsync, Dir: filepath.Dir(s.log), Duration: sz.FsyncDuration})
		if err != nil {
			return err
		}
		out.Fsync = res.Fsync
		m.logf("raw fsync: %.0f/s", res.Fsync.FsyncPerSec)
		for _, clients := range sz.DurableClients {
			for _, journal := range []bool{false, true} {
				res, err := m.job(ctx, Job{Kind: jobDurable, Addr: s.addr, Clients: clients,
					Journal: journal, Warmup: sz.Warmup / 2, Duration: sz.DurableDuration})
				if err != nil {
					return err
				}
				out.Runs = append(out.Runs, res.Durable)
				m.logf("inserts, %d clients, j=%v: %.0f/s", clients, journal, res.Durable.OpsPerSec)
			}
		}
		return nil
	})
	return out, err
}

// expiryPhase runs, on a fresh Mayfly holding the preloaded sessions, the
// storm (expiries spread at 100 000 a second: lateness and invisibility)
// and then the burst (everything expiring at one instant: the deletion
// rate under load and what it leaves the session workload).
func (m *modeRun) expiryPhase(ctx context.Context) (storm, burst *ExpiryResult, err error) {
	return m.expiryOn(ctx, nameMayfly)
}

// expiryOn runs the storm and the burst on a fresh server of kind.
func (m *modeRun) expiryOn(ctx context.Context, kind string) (storm, burst *ExpiryResult, err error) {
	sz := m.cfg.Sizes
	err = m.withServer(ctx, kind, func(s *server) error {
		if _, err := m.load(ctx, s, targetMongo, sz.Sessions); err != nil {
			return err
		}
		spec := sz.stormSpec()
		if storm, err = m.storm(ctx, s, spec); err != nil {
			return err
		}
		m.logf("storm on %s: %d docs, deletion lateness p99 ≤ %.0f ms, %d violations, %.0f expirations/s, %d batches catching up; %s",
			kind, storm.Docs, storm.Lateness.Upper.P99Ms, storm.Visibility.Violations, storm.Lateness.PerSec, storm.CatchUpBatches, storm.Sched)
		// The burst's documents share one date, so the TTL index holds them
		// in _id order whatever their _ids.
		spec.Docs, spec.Window, spec.Burst, spec.Shuffled = sz.BurstDocs, sz.BurstMeasure, true, false
		if burst, err = m.storm(ctx, s, spec); err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		m.logf("burst on %s: %d docs, %.0f expirations/s while a backlog remained, sessions %.0f -> %.0f ops/s",
			kind, burst.Docs, burst.SteadyPerSec, burst.Baseline.OpsPerSec, burst.Storm.OpsPerSec)
		return nil
	})
	return storm, burst, err
}

// neighbourStorm runs the storm on a fresh server of kind with the configured
// CPU-bound neighbour processes running, free to use every CPU whatever
// the mode pins.
func (m *modeRun) neighbourStorm(ctx context.Context, kind string) (*ExpiryResult, error) {
	spec := m.cfg.Sizes.stormSpec()
	spec.Neighbours = m.cfg.Sizes.Neighbours
	if m.clientCPU >= 0 {
		spec.NeighbourCPUs = fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	}
	res, err := m.freshStorm(ctx, kind, spec, nil)
	if err != nil {
		return nil, err
	}
	m.logf("storm on %s with %d neighbours (%.2f cores busy, load %s): deletion lateness p50 ≤ %.0f ms, p99 ≤ %.0f ms, all deleted %v; %s",
		kind, res.Neighbours, res.NeighbourCores, res.LoadAvg, res.Lateness.Upper.P50Ms, res.Lateness.Upper.P99Ms, res.AllDeleted, res.Sched)
	return res, nil
}

// cappedPeriodUs is the accounting period of a capped storm's server: a
// tenth of the default, so that the cap slows the server down evenly
// rather than stopping it for tens of milliseconds at a time.
const cappedPeriodUs = 10_000

// cappedStorms runs the storm on a fresh Mayfly capped at StormCap of
// each core it may run on and, with -baseline-bin, on the previous build,
// each in a control group of its own: this build, the previous one, the
// previous one, this build, keeping each build's worse round, since the
// cap is there to find where the monitor falls behind.
func (m *modeRun) cappedStorms(ctx context.Context) (this, previous *ExpiryResult, err error) {
	kinds := []string{nameMayfly}
	if m.cfg.BaselineBin != "" {
		kinds = []string{nameMayfly, nameBaseline, nameBaseline, nameMayfly}
	}
	for _, kind := range kinds {
		res, err := m.cappedStorm(ctx, kind)
		if err != nil {
			return this, previous, fmt.Errorf("capped storm on %s: %w", kind, err)
		}
		if kind == nameMayfly {
			this = worseStorm(this, res)
		} else {
			previous = worseStorm(previous, res)
		}
	}
	return this, previous, nil
}

func worseStorm(a, b *ExpiryResult) *ExpiryResult {
	if a == nil || b.Lateness.Upper.P99Ms > a.Lateness.Upper.P99Ms {
		return b
	}
	return a
}

// cappedStorm runs the storm on a fresh server of kind in a control group
// capped at StormCap of each core the server may run on: a cap of one
// core's share on a server that may use two would halve its capacity
// rather than slow its cores.
func (m *modeRun) cappedStorm(ctx context.Context, kind string) (*ExpiryResult, error) {
	share, n := m.cfg.Sizes.StormCap, m.serverCores()
	cores := share * float64(n)
	g, err := cpucap.New(fmt.Sprintf("mayfly-bench-%d-%s-storm", os.Getpid(), m.mode), cores, cappedPeriodUs)
	if err != nil {
		return nil, err
	}
	res, err := m.freshStorm(ctx, kind, m.cfg.Sizes.stormSpec(), g)
	err = errors.Join(err, g.Remove())
	if err != nil {
		return nil, err
	}
	res.Server, res.Cap, res.CapCores = kind, share, n
	m.logf("storm on %s capped at %.2f cores: deletion lateness p50 ≤ %.0f ms, p99 ≤ %.0f ms, all deleted %v, sessions %.0f -> %.0f ops/s, %d batches catching up; %s",
		kind, cores, res.Lateness.Upper.P50Ms, res.Lateness.Upper.P99Ms, res.AllDeleted, res.Baseline.OpsPerSec, res.Storm.OpsPerSec, res.CatchUpBatches, res.Sched)
	return res, nil
}

// streamStorms runs the storm on a fresh Mayfly each time with a change
// stream of its expiries open: without pre-images, then with them; with
// -baseline-bin, each on the previous build right after this one, so
// that the two see the same load.
func (m *modeRun) streamStorms(ctx context.Context) ([]*ExpiryResult, error) {
	kinds := []string{nameMayfly}
	if m.cfg.BaselineBin != "" {
		kinds = append(kinds, nameBaseline)
	}
	modes := []string{stormStreamOff, stormStreamPre}
	if m.cfg.Sizes.StormStreamsNoPre {
		modes = modes[:1]
	}
	var out []*ExpiryResult
	for _, mode := range modes {
		for _, kind := range kinds {
			res, err := m.streamStorm(ctx, kind, mode)
			if err != nil {
				return out, fmt.Errorf("storm with a stream (%s, %s): %w", kind, mode, err)
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// streamStorm runs one storm with a stream open on a fresh server of kind.
func (m *modeRun) streamStorm(ctx context.Context, kind, mode string) (*ExpiryResult, error) {
	spec := m.cfg.Sizes.stormSpec()
	spec.Stream = mode
	res, err := m.freshStorm(ctx, kind, spec, nil)
	if err != nil {
		return nil, err
	}
	res.Server = kind
	ev := res.Events
	m.logf("storm on %s with a stream (pre-images %v): deletion lateness p99 ≤ %.0f ms, all deleted %v; %d of %d events, %d with pre-images, wallTime − expiredAt p50 %.0f ms, p99 %.0f ms",
		kind, ev.PreImages, res.Lateness.Upper.P99Ms, res.AllDeleted, ev.Events, ev.Expected, ev.WithPreImage, ev.Lateness.P50Ms, ev.Lateness.P99Ms)
	return res, nil
}

// freshStorm runs spec on a fresh server of kind holding the preloaded
// sessions, in the control group g when it is not nil.
func (m *modeRun) freshStorm(ctx context.Context, kind string, spec StormSpec, g *cpucap.Group) (*ExpiryResult, error) {
	var res *ExpiryResult
	err := m.withServerIn(ctx, kind, g, func(s *server) error {
		if _, err := m.load(ctx, s, targetMongo, m.cfg.Sizes.Sessions); err != nil {
			return err
		}
		var err error
		res, err = m.storm(ctx, s, spec)
		return err
	})
	return res, err
}

func (m *modeRun) storm(ctx context.Context, s *server, spec StormSpec) (*ExpiryResult, error) {
	res, err := m.job(ctx, Job{Kind: jobExpiry, Addr: s.addr, ServerPID: s.pid(),
		Clients: m.cfg.Sizes.Clients, Count: m.cfg.Sizes.Sessions, Storm: &spec})
	if err != nil {
		return nil, err
	}
	return res.Expiry, nil
}

// MemoryResult is resident memory with the same live sessions in Mayfly
// and in Redis.
type MemoryResult struct {
	Sessions      int   `json:"sessions"`
	MayflyIdleRSS int64 `json:"mayfly_idle_rss"`
	MayflyRSS     int64 `json:"mayfly_rss"`
	RedisIdleRSS  int64 `json:"redis_idle_rss"`
	RedisRSS      int64 `json:"redis_rss"`
}

// memoryPhase loads the same sessions into a fresh Mayfly and a fresh
// Redis and reads each one's VmRSS, idle and loaded.
func (m *modeRun) memoryPhase(ctx context.Context) (*MemoryResult, error) {
	out := &MemoryResult{Sessions: m.cfg.MemorySessions}
	for _, kind := range []string{nameMayfly, nameRedis} {
		idle, loaded := &out.MayflyIdleRSS, &out.MayflyRSS
		if kind == nameRedis {
			idle, loaded = &out.RedisIdleRSS, &out.RedisRSS
		}
		err := m.withServer(ctx, kind, func(s *server) error {
			var err error
			if *idle, err = rssBytes(s.pid()); err != nil {
				return err
			}
			if _, err := m.load(ctx, s, targetOf(kind), out.Sessions); err != nil {
				return err
			}
			if err := sleepUntil(ctx, time.Now().Add(m.cfg.MemorySettle)); err != nil {
				return err
			}
			waited, err := waitQuiet(ctx, s.pid(), maxQuietWait)
			if err != nil {
				return err
			}
			m.logf("%s quiet %s after the settle", kind, waited.Round(time.Second))
			*loaded, err = rssBytes(s.pid())
			return err
		})
		if err != nil {
			return out, fmt.Errorf("memory of %s: %w", kind, err)
		}
		m.logf("%s RSS with %d sessions: %d MiB", kind, out.Sessions, *loaded>>20)
	}
	return out, nil
}
