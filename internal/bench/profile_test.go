package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestProfileServer runs a Mayfly server inside the test process under the
// session workload (MAYFLY_BENCH_PROFILE=sessions; sessions-streams with
// ten change streams open on the collection; sessions-log with the
// change log on but no stream open, as after a stream that closed), j: true inserts from
// 64 clients (durable) or expiry with the session workload (storm;
// storm-shuffled, its _ids in random order to expiry; storm-streams,
// with a change stream of its expiries open; burst), at the
// -short sizes, so that go test's -cpuprofile, -mutexprofile and
// -blockprofile see the server, which has no pprof endpoint of its own.
// The driver's frames are in the same profile, under
// go.mongodb.org/mongo-driver.
// MAYFLY_BENCH_PROFILE_SECONDS sets the sessions run (default 10);
// MAYFLY_BENCH_NEIGHBOURS=N runs N CPU-bound neighbour processes beside
// an expiry run (see -neighbour); MAYFLY_BENCH_CPUPROFILE=file profiles
// the run after the sessions' preload; MAYFLY_BENCH_STORM_CPUPROFILE=file
// profiles an expiry run's baseline and storm alone, not its load. It is
// skipped unless MAYFLY_BENCH_PROFILE is set:
//
//	MAYFLY_BENCH_PROFILE=sessions go test ./internal/bench -run ProfileServer \
//	    -cpuprofile cpu.prof -mutexprofile mutex.prof -blockprofile block.prof
func TestProfileServer(t *testing.T) {
	what := os.Getenv("MAYFLY_BENCH_PROFILE")
	if what == "" {
		t.Skip("set MAYFLY_BENCH_PROFILE=sessions, durable or storm to profile the server")
	}
	secs := profileSeconds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+3*time.Minute)
	defer cancel()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(app.Config{Addr: addr, DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	sz := ShortSizes()
	if err := loadMongoSessions(ctx, addr, sz.Sessions); err != nil {
		t.Fatal(err)
	}
	// Started once the sessions are loaded, so that the profile shows the
	// workload and not the preload's inserts, as -cpuprofile does.
	stop, err := startCPUProfile(os.Getenv("MAYFLY_BENCH_CPUPROFILE"))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	job := Job{Addr: addr, ServerPID: os.Getpid(), Clients: sz.Clients, Count: sz.Sessions, RunID: 1,
		Warmup: time.Second, Duration: time.Duration(secs) * time.Second}
	switch what {
	case "sessions":
		job.Kind, job.Target = jobSessions, targetMongo
	case "sessions-streams":
		job.Kind, job.Target, job.Streams = jobSessions, targetMongo, sz.Streams
	case "sessions-log":
		job.Kind, job.Target = jobSessions, targetMongo
		if err := turnLogOn(ctx, addr); err != nil {
			t.Fatal(err)
		}
	case "durable":
		job.Kind, job.Journal = jobDurable, true
	case "storm", "storm-shuffled", "storm-streams", "burst":
		job.Kind = jobExpiry
		spec := sz.stormSpec()
		spec.Shuffled = what == "storm-shuffled"
		job.Storm = &spec
		if what == "storm-streams" {
			job.Storm.Stream = stormStreamOff
		}
		if what == "burst" {
			job.Storm.Docs, job.Storm.Window, job.Storm.Burst = sz.BurstDocs, sz.BurstMeasure, true
		}
		// MAYFLY_BENCH_NEIGHBOURS runs that many CPU-bound neighbour
		// processes (this test binary, see TestMain) beside the storm.
		job.Storm.Neighbours, _ = strconv.Atoi(os.Getenv("MAYFLY_BENCH_NEIGHBOURS"))
		job.Storm.CPUProfile = os.Getenv("MAYFLY_BENCH_STORM_CPUPROFILE")
	default:
		t.Fatalf("MAYFLY_BENCH_PROFILE=%q: want sessions, sessions-streams, sessions-log, durable, storm, storm-shuffled, storm-streams or burst", what)
	}
	res, err := RunJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Sessions; r != nil {
		t.Logf("%.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors; process CPU (server and clients) %.1f µs/op",
			r.OpsPerSec, r.Latency.P50Ms, r.Latency.P99Ms, r.Mix.Errors, r.ServerCPUPerOpUs)
		if s := r.Streams; s != nil {
			t.Logf("%d streams: %d writes, %d–%d events each, %d getMores, lag p99 %.2f ms",
				s.Streams, s.Writes, s.MinEvents, s.MaxEvents, s.GetMore, s.Lag.P99Ms)
		}
	}
	if r := res.Durable; r != nil {
		t.Logf("%.0f inserts/s, p50 %.2f ms, p99 %.2f ms", r.OpsPerSec, r.Latency.P50Ms, r.Latency.P99Ms)
	}
	if e := res.Expiry; e != nil {
		t.Logf("storm: deleted %d of %d, lateness p99 ≤ %.0f ms, %.0f/s; sessions %.0f → %.0f ops/s; %d violations",
			e.Lateness.Deleted, e.Docs, e.Lateness.Upper.P99Ms, e.Lateness.PerSec, e.Baseline.OpsPerSec, e.Storm.OpsPerSec, e.Visibility.Violations)
	}
}

// turnLogOn opens a change stream on the sessions collection and closes
// it: a standalone server's change log stays on from then on, so the
// writes pay for their events with no stream reading them.
func turnLogOn(ctx context.Context, addr string) error {
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true"))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	cs, err := c.Database(benchDB).Collection(sessionsColl).Watch(ctx, mongo.Pipeline{})
	if err != nil {
		return err
	}
	return cs.Close(ctx)
}

// profileSeconds is MAYFLY_BENCH_PROFILE_SECONDS, 10 by default.
func profileSeconds() int {
	secs, _ := strconv.Atoi(os.Getenv("MAYFLY_BENCH_PROFILE_SECONDS"))
	if secs <= 0 {
		secs = 10
	}
	return secs
}

// TestProfileReplSet runs a three-member replica set inside the test
// process and w: "majority" inserts from 64 clients through its seed list,
// so that go test's -cpuprofile sees all three members (and the driver) at
// once. It is skipped unless MAYFLY_BENCH_PROFILE=replset:
//
//	MAYFLY_BENCH_PROFILE=replset go test ./internal/bench -run ProfileReplSet -cpuprofile cpu.prof
//
// replset-sessions runs the session workload on the primary instead
// (the -short sizes' preload, 64 clients, retryable writes as a driver
// sends them to a set member) and logs the primary's resident cache
// counters after it: whether the token index's value filter outlived the
// raft log's compactions (warmUps, misses).
func TestProfileReplSet(t *testing.T) {
	what := os.Getenv("MAYFLY_BENCH_PROFILE")
	switch what {
	case "replset", "replset-storm", "replset-expiry", "replset-sessions":
	default:
		t.Skip("set MAYFLY_BENCH_PROFILE=replset, replset-storm, replset-expiry or replset-sessions to profile a replica set")
	}
	secs := profileSeconds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+5*time.Minute)
	defer cancel()
	rs := &replSetRun{members: []*server{{}, {}, {}}} // in-process members: only their addresses
	for range 3 {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Start(app.Config{Addr: addr, DataDir: t.TempDir(), ReplSet: replSetName,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Shutdown(context.WithoutCancel(ctx))
		rs.addrs = append(rs.addrs, addr)
	}
	if err := rs.initiateOnly(ctx); err != nil {
		t.Fatal(err)
	}
	for !memberWritable(ctx, rs.addrs[0]) && !memberWritable(ctx, rs.addrs[1]) && !memberWritable(ctx, rs.addrs[2]) {
		if err := sleepUntil(ctx, time.Now().Add(50*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if what == "replset-expiry" {
		profileReplSetStorm(ctx, t, rs)
		return
	}
	if what == "replset-sessions" {
		profileReplSetSessions(ctx, t, rs, secs)
		return
	}
	job := Job{Kind: jobDurable, URI: rs.uri(), Majority: true, Clients: 64, RunID: 1,
		Warmup: time.Second, Duration: time.Duration(secs) * time.Second}
	if what == "replset-storm" {
		sz := ShortSizes()
		p, err := rs.primary(ctx, -1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		spec := sz.stormSpec()
		job = Job{Kind: jobExpiry, Addr: rs.addrs[p], ServerPID: os.Getpid(), Clients: sz.Clients, Count: sz.Sessions, RunID: 1, Storm: &spec}
	}
	res, err := RunJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Durable; r != nil {
		t.Logf("%.0f w:majority inserts/s, p50 %.2f ms, p99 %.2f ms", r.OpsPerSec, r.Latency.P50Ms, r.Latency.P99Ms)
	}
	if e := res.Expiry; e != nil {
		t.Logf("storm: deleted %d of %d, lateness p99 ≤ %.0f ms, %.0f/s", e.Lateness.Deleted, e.Docs, e.Lateness.Upper.P99Ms, e.Lateness.PerSec)
	}
}

// profileReplSetSessions runs the session workload on the set's primary
// and logs its rate and the primary's resident cache counters.
func profileReplSetSessions(ctx context.Context, t *testing.T, rs *replSetRun, secs int) {
	p, err := rs.primary(ctx, -1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	primary := rs.addrs[p]
	sz := ShortSizes()
	if err := loadMongoSessions(ctx, primary, sz.Sessions); err != nil {
		t.Fatal(err)
	}
	res, err := RunJob(ctx, Job{Kind: jobSessions, Target: targetMongo, Addr: primary, ServerPID: os.Getpid(),
		Clients: sz.Clients, Count: sz.Sessions, RunID: 1, Warmup: time.Second, Duration: time.Duration(secs) * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sessions; s != nil {
		t.Logf("sessions on the primary: %.0f ops/s, p50 %.2f ms, p99 %.2f ms", s.OpsPerSec, s.Latency.P50Ms, s.Latency.P99Ms)
	}
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + primary + "/?directConnection=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	var status struct {
		Cache map[string]int64 `bson:"mayflyCache"`
		Repl  struct {
			Raft map[string]any `bson:"raft"`
		} `bson:"repl"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	t.Logf("primary's cache: %v", status.Cache)
	t.Logf("primary's raft log: %v", status.Repl.Raft)
}

// profileReplSetStorm runs the replica set phase's own storm (the -short
// sizes, or MAYFLY_BENCH_STORM_DOCS documents) with no other load.
// MAYFLY_BENCH_STORM_CPUPROFILE=file profiles the storm's window alone,
// from its arming to its last deletion, without the load before it (use
// it instead of -cpuprofile, which would cover the load too):
//
//	MAYFLY_BENCH_PROFILE=replset-expiry MAYFLY_BENCH_STORM_DOCS=300000 \
//	    MAYFLY_BENCH_STORM_CPUPROFILE=storm.prof go test ./internal/bench -run ProfileReplSet
func profileReplSetStorm(ctx context.Context, t *testing.T, rs *replSetRun) {
	sz := ShortSizes()
	if n, err := strconv.Atoi(os.Getenv("MAYFLY_BENCH_STORM_DOCS")); err == nil && n > 0 {
		sz.StormDocs, sz.StormWindow = n, time.Duration(n/100)*time.Millisecond
	}
	rs.m = &modeRun{cfg: &Config{Sizes: sz, Log: os.Stderr}, mode: "profile"}
	rs.stormProfile = os.Getenv("MAYFLY_BENCH_STORM_CPUPROFILE")
	res := &ReplSetResult{}
	if err := rs.storm(ctx, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("storm of %d: lateness p99 primary %.0f ms, secondary %.0f ms; lag p99 %.0f ms",
		res.StormDocs, res.StormPrimary.Upper.P99Ms, res.StormSecondary.Upper.P99Ms, res.LagP99Ms)
}
