package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// SessionsResult is one run of the session workload against one target.
type SessionsResult struct {
	Target string `json:"target"`
	// Server is the build it ran on in rounds beside the previous build
	// (mayfly, mayfly-baseline).
	Server  string `json:"server,omitempty"`
	Clients int    `json:"clients"`
	WindowResult
	Mix MixResult `json:"mix"`
	// CPU time used inside the measured window, per operation, by the
	// server process and by this client process.
	ServerCPUPerOpUs float64 `json:"server_cpu_per_op_us"`
	ClientCPUPerOpUs float64 `json:"client_cpu_per_op_us"`
	// BehindCPUPerOpUs is the shard's behind a router (Job.BehindPID).
	BehindCPUPerOpUs float64 `json:"behind_cpu_per_op_us,omitempty"`
	// Streams is set when change streams were open during the run.
	Streams *StreamsResult `json:"streams,omitempty"`
}

// cpuDelta is the CPU time processes used over a span.
type cpuDelta struct {
	server, behind, client time.Duration
	err                    error
}

// sampleCPU reads the CPU time of the server, of the process behind it
// (0: none) and of this process at the start and the end of win, and
// sends the differences.
func sampleCPU(ctx context.Context, serverPID, behindPID int, win span) <-chan cpuDelta {
	out := make(chan cpuDelta, 1)
	go func() {
		read := func(at time.Time) (d cpuDelta) {
			if d.err = sleepUntil(ctx, at); d.err != nil {
				return d
			}
			d.client, d.err = cpuTime(os.Getpid())
			if d.err == nil && serverPID > 0 {
				d.server, d.err = cpuTime(serverPID)
			}
			if d.err == nil && behindPID > 0 {
				d.behind, d.err = cpuTime(behindPID)
			}
			return d
		}
		d0 := read(win.from)
		if d0.err != nil {
			out <- d0
			return
		}
		d1 := read(win.to)
		out <- cpuDelta{server: d1.server - d0.server, behind: d1.behind - d0.behind,
			client: d1.client - d0.client, err: d1.err}
	}()
	return out
}

// sleepUntil waits for t or for ctx to end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// runSessionsJob runs the session workload: j.Clients workers over the
// j.Count preloaded sessions, measured for j.Duration after j.Warmup.
func runSessionsJob(ctx context.Context, j Job) (*SessionsResult, error) {
	st, err := newStore(ctx, j.Target, j.Addr, j.Clients)
	if err != nil {
		return nil, err
	}
	defer st.close(context.WithoutCancel(ctx))
	streams, stop, err := withStreams(ctx, j)
	if err != nil {
		return nil, err
	}
	defer stop()
	start := time.Now()
	win := span{start.Add(j.Warmup), start.Add(j.Warmup + j.Duration)}
	cpu := sampleCPU(ctx, j.ServerPID, j.BehindPID, win)
	spec := mixSpec{clients: j.Clients, preloaded: j.Count, runID: j.RunID}
	rec, mix, restore := runMix(ctx, st, spec, []span{win}, win.to)
	d := <-cpu
	if d.err != nil {
		return nil, d.err
	}
	res := &SessionsResult{Target: j.Target, Clients: j.Clients, WindowResult: rec.result(0), Mix: mix}
	if n := float64(res.Latency.Count); n > 0 {
		res.ServerCPUPerOpUs = float64(d.server.Microseconds()) / n
		res.ClientCPUPerOpUs = float64(d.client.Microseconds()) / n
		res.BehindCPUPerOpUs = float64(d.behind.Microseconds()) / n
	}
	if streams != nil {
		writes := mix.Writes
		if ms, ok := st.(*mongoStore); ok {
			writes -= ms.unchanged.Load()
		}
		if res.Streams, err = streams.finish(ctx, st, writes, mix.Errors, time.Now()); err != nil {
			return nil, err
		}
	}
	if err := checkMix(res.Latency.Count, mix); err != nil {
		return nil, err
	}
	// After the streams' end marker, so that the streams' figures are the
	// measured window's.
	if err := restore(ctx); err != nil {
		return nil, fmt.Errorf("put the sessions back: %w", err)
	}
	if mix.Misses > 0 {
		// Every operation names a session its worker holds: a miss means
		// the server holds other sessions than the workers think.
		return nil, fmt.Errorf("%d operations found no session", mix.Misses)
	}
	return res, nil
}

// withStreams opens j.Streams change streams on the sessions collection
// through their own client and starts reading them; nil when the job has
// none.
func withStreams(ctx context.Context, j Job) (*streamSet, func(), error) {
	if j.Streams == 0 {
		return nil, func() {}, nil
	}
	c, err := dialMongo(ctx, j.Addr, j.Streams)
	if err != nil {
		return nil, nil, err
	}
	stop := func() { _ = c.Disconnect(context.WithoutCancel(ctx)) }
	cs, err := openStreams(ctx, c, j.Streams, fmt.Sprintf("streams-end-%d", j.RunID))
	if err != nil {
		stop()
		return nil, nil, err
	}
	ss := &streamSet{consumers: cs}
	ss.start(ctx)
	return ss, stop, nil
}

// checkMix fails a run in which nothing worked or more than 1% of the
// operations failed; a few failures are reported but tolerated.
func checkMix(ops uint64, mix MixResult) error {
	if ops == 0 {
		return errors.New("no operation completed in the measured window: " + mix.FirstErr)
	}
	var total int64
	for _, n := range mix.Ops {
		total += n
	}
	if mix.Errors*100 > total {
		return fmt.Errorf("%d of %d operations failed, first: %s", mix.Errors, total, mix.FirstErr)
	}
	return nil
}
