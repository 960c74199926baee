package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestProfileReplSet runs a three-member replica set inside the test
// process and w: "majority" inserts from 64 clients through its seed list,
// so that go test's -cpuprofile sees all three members (and the driver) at
// once. It is skipped unless MAYFLY_BENCH_PROFILE=replset:
//
//	MAYFLY_BENCH_PROFILE=replset go test ./internal/bench -run ProfileReplSet -cpuprofile cpu.prof
func TestProfileReplSet(t *testing.T) {
	if os.Getenv("MAYFLY_BENCH_PROFILE") != "replset" {
		t.Skip("set MAYFLY_BENCH_PROFILE=replset to profile a replica set")
	}
	secs, _ := strconv.Atoi(os.Getenv("MAYFLY_BENCH_PROFILE_SECONDS"))
	if secs <= 0 {
		secs = 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+2*time.Minute)
	defer cancel()
	rs := &replSetRun{members: make([]*server, 3)}
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
	job := Job{Kind: jobDurable, URI: rs.uri(), Majority: true, Clients: 64, RunID: 1,
		Warmup: time.Second, Duration: time.Duration(secs) * time.Second}
	res, err := RunJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.0f w:majority inserts/s, p50 %.2f ms, p99 %.2f ms", res.Durable.OpsPerSec, res.Durable.Latency.P50Ms, res.Durable.Latency.P99Ms)
}
