package server

import (
	"testing"
	"time"
)

// Big drops within one interval share one return; small drops ask for
// none; a drop after a return schedules the next.
func TestMemoryReturnerCoalesces(t *testing.T) {
	m := newMemoryReturner(func() bool { return true })
	var scheduled []func()
	var delays []time.Duration
	frees := 0
	m.after = func(d time.Duration, f func()) { delays, scheduled = append(delays, d), append(scheduled, f) }
	m.free = func() { frees++ }
	m.heap = func() heapState { return heapState{} }

	m.released(bigRelease-1, false)
	if len(scheduled) != 0 {
		t.Fatalf("a %d-byte drop scheduled a return", bigRelease-1)
	}
	m.released(bigRelease, false)
	m.released(10*bigRelease, false)
	if len(scheduled) != 1 || delays[0] != returnInterval {
		t.Fatalf("two big drops scheduled %d returns (delays %v), want 1 after %v", len(scheduled), delays, returnInterval)
	}
	scheduled[0]()
	if frees != 1 {
		t.Fatalf("%d returns ran, want 1", frees)
	}
	m.released(bigRelease, false)
	if len(scheduled) != 2 {
		t.Fatalf("a big drop after the return scheduled %d in all, want 2", len(scheduled))
	}
}

// A return that took long spaces the next one by costFactor times its
// duration, so forced collections take at most about a tenth of the time.
func TestMemoryReturnerSpacedByCost(t *testing.T) {
	m := newMemoryReturner(func() bool { return true })
	var scheduled []func()
	var delays []time.Duration
	m.after = func(d time.Duration, f func()) { delays, scheduled = append(delays, d), append(scheduled, f) }
	now := time.Unix(0, 0)
	m.now = func() time.Time { return now }
	m.free = func() { now = now.Add(300 * time.Millisecond) }
	m.heap = func() heapState { return heapState{} }

	m.released(bigRelease, false)
	scheduled[0]()
	m.released(bigRelease, false)
	if want := costFactor * 300 * time.Millisecond; len(delays) != 2 || delays[1] != want {
		t.Fatalf("delays %v after a 300 ms return, want the second %v", delays, want)
	}
}

// fakeReturner is a memoryReturner whose timers are run by hand.
type fakeReturner struct {
	*memoryReturner
	timers  []time.Duration
	pending []func()
	frees   int
	heap    heapState
	busy    bool
}

func newFakeReturner() *fakeReturner {
	f := &fakeReturner{}
	f.memoryReturner = newMemoryReturner(func() bool { return !f.busy })
	f.after = func(d time.Duration, fn func()) { f.timers, f.pending = append(f.timers, d), append(f.pending, fn) }
	f.free = func() { f.frees++ }
	f.memoryReturner.heap = func() heapState { return f.heap }
	return f
}

// fire runs the timers waiting, in order, and reports how many there were.
func (f *fakeReturner) fire() int {
	run := f.pending
	f.pending = nil
	for _, fn := range run {
		fn()
	}
	return len(run)
}

// A quiet server returns memory when it holds much garbage (allocations
// since the last return) or much freed memory (a burst's), and nothing
// when it holds little; the look comes a quietPeriod after it went idle.
func TestMemoryReturnerWhenQuiet(t *testing.T) {
	cases := []struct {
		name string
		heap heapState
		want bool
	}{
		{"little allocated, little free", heapState{allocated: idleGrowth, free: idleGrowth}, false},
		{"much allocated since the last return", heapState{allocated: idleGrowth + 1}, true},
		{"much freed and held", heapState{free: idleGrowth + 1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeReturner()
			f.heap = tc.heap
			f.released(0, true)
			if len(f.timers) != 1 || f.timers[0] != quietPeriod {
				t.Fatalf("going idle set timers %v, want one of %v", f.timers, quietPeriod)
			}
			f.fire()
			if f.fire(); (f.frees == 1) != tc.want {
				t.Fatalf("%+v: %d returns, want a return %v", tc.heap, f.frees, tc.want)
			}
		})
	}
}

// A server that runs requests while the check waits is not quiet: the
// check waits a period again from when it is idle, and returns only then;
// one busy when the check comes arms nothing until its request ends.
func TestMemoryReturnerWaitsForQuiet(t *testing.T) {
	f := newFakeReturner()
	f.heap = heapState{free: idleGrowth + 1}
	f.released(0, true)
	f.released(0, true) // another request, ended within the period
	f.fire()
	if f.frees != 0 || len(f.pending) != 1 {
		t.Fatalf("requests within the period: %d returns, %d checks waiting; want none, one", f.frees, len(f.pending))
	}
	f.busy = true
	f.fire()
	if f.frees != 0 || len(f.pending) != 0 {
		t.Fatalf("busy at the check: %d returns, %d checks waiting; want none", f.frees, len(f.pending))
	}
	f.busy = false
	f.released(0, true)
	f.fire() // the quiet check
	f.fire() // the return it scheduled
	if f.frees != 1 {
		t.Fatalf("quiet after the request: %d returns, want 1", f.frees)
	}
}

// Requests ending one after another arm one timer and never read the
// runtime's counters: the request path pays an atomic operation.
func TestMemoryReturnerRequestPathIsCheap(t *testing.T) {
	f := newFakeReturner()
	reads := 0
	f.memoryReturner.heap = func() heapState { reads++; return heapState{} }
	for range 1000 {
		f.released(0, true)
	}
	if len(f.timers) != 1 || reads != 0 {
		t.Fatalf("1,000 requests ending: %d timers, %d counter reads; want 1, 0", len(f.timers), reads)
	}
}

// The server-wide buffer total follows each connection's published
// figure, up and down, and a finished connection counts nothing.
func TestConnBuffersPublishDeltas(t *testing.T) {
	s := &Server{}
	a, b := connBuffers{total: &s.bufferBytes}, connBuffers{total: &s.bufferBytes}
	a.set(100)
	b.set(50)
	a.set(30)
	if got := s.bufferBytes.Load(); got != 80 {
		t.Fatalf("total %d, want 80", got)
	}
	a.set(0)
	b.set(0)
	if got := s.bufferBytes.Load(); got != 0 {
		t.Fatalf("total %d after both finished, want 0", got)
	}
}
