package bgyield

import (
	"io"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// TestYieldPolicy walks a Yielder through the states of a server: no
// traffic source, clients whose bytes keep arriving, bytes that stopped
// arriving while background work runs, and an idle server. Each step says
// whether that yield must pause.
func TestYieldPolicy(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	type step struct {
		advance time.Duration // the clock moves this much first
		bytes   int64         // the traffic then
		pause   bool
	}
	cases := []struct {
		name  string
		watch bool
		steps []step
	}{
		{"no traffic source: always a Gosched", false, []step{
			{0, 0, false}, {time.Second, 0, false}, {time.Millisecond, 0, false},
		}},
		{"bytes keep arriving: requests get through", true, []step{
			{0, 10, false}, {400 * time.Microsecond, 20, false}, {400 * time.Microsecond, 30, false},
			{time.Millisecond, 40, false}, {5 * time.Millisecond, 50, false},
		}},
		{"bytes stop while clients are active: a pause each budget", true, []step{
			{0, 10, false},                         // traffic moved
			{budget / 2, 10, false},                // within the budget
			{budget / 2, 10, true},                 // the budget is spent
			{budget / 2, 10, false},                // a budget after that pause, not before
			{budget / 2, 10, true},                 //
			{budget, 11, false},                    // the poll read bytes
			{budget - time.Microsecond, 11, false}, //
			{2 * time.Microsecond, 11, true},       //
			{active, 11, false},                    // clients left: full speed
			{budget, 11, false},                    //
			{budget, 12, false},                    // a client is back
			{budget, 12, true},                     //
			{active + budget, 12, false},           //
			{10 * time.Millisecond, 12, false},     //
			{time.Duration(0), 13, false},          //
			{budget + time.Microsecond, 13, true},  //
			{time.Duration(0), 13, false},          // just paused
			{budget + time.Microsecond, 13, true},  //
			{time.Microsecond, 14, false},          //
			{budget + time.Microsecond, 14, true},  //
			{active - 2*budget, 14, true},          // still within active of the last move
			{2 * budget, 14, false},                // past it
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(start)
			var bytes atomic.Int64
			y := New(clk, func() {})
			if tc.watch {
				y.Watch(bytes.Load)
			}
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				bytes.Store(s.bytes)
				if got := y.mustPause(); got != s.pause {
					t.Fatalf("step %d (%+v): pause %v, want %v", i, s, got, s.pause)
				}
			}
		})
	}
}

// TestYieldCallsGoschedOrPauses checks what Yield does in each case: a
// Gosched, or a pause that ends when the clock passes it.
func TestYieldCallsGoschedOrPauses(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	var goscheds atomic.Int64
	y := New(clk, func() { goscheds.Add(1) })
	y.Watch(func() int64 { return 1 })
	y.Yield() // the bytes moved: a Gosched
	if goscheds.Load() != 1 || y.Pauses() != 0 {
		t.Fatalf("after moving bytes: %d Goscheds, %d pauses; want 1, 0", goscheds.Load(), y.Pauses())
	}
	clk.Advance(budget)
	done := make(chan struct{})
	go func() { y.Yield(); close(done) }()
	for y.Pauses() == 0 {
		runtime.Gosched()
	}
	select {
	case <-done:
		t.Fatal("the pause ended before the clock passed it")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(pause)
	<-done
	if goscheds.Load() != 1 {
		t.Fatalf("a pause also called Gosched")
	}
}

// TestPauseLetsTheSchedulerPollTheNetwork is the reason for the package:
// on one scheduler thread, background work that yields with Gosched keeps
// the run queue from emptying, and bytes that reach a socket meanwhile are
// read only when the runtime's monitor polls (every 10 ms); with a Yielder
// watching the traffic, within about a budget. Twenty messages each, the
// medians compared with a bound between the two.
func TestPauseLetsTheSchedulerPollTheNetwork(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const bound = 3 * time.Millisecond
	gosched := readDelays(t, func(*atomic.Int64) func() { return runtime.Gosched })
	yielder := readDelays(t, func(traffic *atomic.Int64) func() {
		y := New(clock.Real{}, runtime.Gosched)
		y.Watch(traffic.Load)
		return y.Yield
	})
	t.Logf("read delay, median of %d: Gosched %v, Yielder %v", len(yielder), median(gosched), median(yielder))
	if median(yielder) >= bound {
		t.Errorf("with a Yielder a message waited %v (median) to be read, want under %v", median(yielder), bound)
	}
	if median(gosched) < bound {
		t.Errorf("with Gosched alone a message waited %v (median): the test no longer shows starvation", median(gosched))
	}
}

// readDelays sends twenty messages, each while a background loop yields
// with what makeYield returns, and returns how long each took to be read.
func readDelays(t *testing.T, makeYield func(traffic *atomic.Int64) func()) []time.Duration {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	var traffic atomic.Int64
	readAt := make(chan time.Time)
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := io.ReadFull(server, buf); err != nil {
				close(readAt)
				return
			}
			traffic.Add(1)
			readAt <- time.Now()
		}
	}()
	yield := makeYield(&traffic)
	var delays []time.Duration
	for i := range 21 { // the first makes the client active
		stop := make(chan struct{})
		stopped := make(chan struct{})
		go func() { // the background writer: 20 µs of work between yields
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for end := time.Now().Add(20 * time.Microsecond); time.Now().Before(end); {
				}
				yield()
			}
		}()
		time.Sleep(2 * time.Millisecond) // the loop is running
		sent := time.Now()
		if _, err := client.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if at := <-readAt; i > 0 {
			delays = append(delays, at.Sub(sent))
		}
		close(stop)
		<-stopped
	}
	return delays
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
