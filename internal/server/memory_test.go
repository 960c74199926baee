package server

import (
	"testing"
	"time"
)

// Big drops within one interval share one return; small drops ask for
// none; a drop after a return schedules the next.
func TestMemoryReturnerCoalesces(t *testing.T) {
	m := newMemoryReturner()
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
	m := newMemoryReturner()
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

// A server going idle asks for a return only once it has allocated more
// than idleGrowth since the last one.
func TestMemoryReturnerOnIdleAfterGrowth(t *testing.T) {
	m := newMemoryReturner()
	var scheduled []func()
	m.after = func(_ time.Duration, f func()) { scheduled = append(scheduled, f) }
	m.free = func() {}
	allocated := int64(100 << 20)
	m.heap = func() heapState { return heapState{allocated: allocated} }
	now := time.Unix(0, 0)
	m.now = func() time.Time {
		now = now.Add(idleCheckInterval) // every check is due
		return now
	}

	m.released(0, true)
	if len(scheduled) != 1 {
		t.Fatalf("idle with %d MiB allocated: %d returns scheduled, want 1", allocated>>20, len(scheduled))
	}
	scheduled[0]() // records 100 MiB as allocated at the return
	allocated += idleGrowth
	m.released(0, true)
	if len(scheduled) != 1 {
		t.Fatalf("idle with exactly idleGrowth allocated scheduled a return")
	}
	allocated++
	m.released(0, false)
	if len(scheduled) != 1 {
		t.Fatalf("a busy server scheduled a return for its allocations")
	}
	m.released(0, true)
	if len(scheduled) != 2 {
		t.Fatalf("idle with more than idleGrowth allocated: %d returns scheduled, want 2", len(scheduled))
	}
}

// Idle checks within idleCheckInterval of the last one do not read the
// allocation counter: a client sending one request at a time makes the
// server idle after each.
func TestMemoryReturnerIdleChecksSpaced(t *testing.T) {
	m := newMemoryReturner()
	reads := 0
	m.heap = func() heapState { reads++; return heapState{} }
	now := time.Unix(0, 0).Add(idleCheckInterval)
	m.now = func() time.Time { return now }
	for range 1000 {
		m.released(0, true)
	}
	now = now.Add(idleCheckInterval - 1)
	m.released(0, true)
	if reads != 1 {
		t.Fatalf("%d counter reads within one interval, want 1", reads)
	}
	now = now.Add(1)
	m.released(0, true)
	if reads != 2 {
		t.Fatalf("%d counter reads after the interval, want 2", reads)
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

// An idle server holding the freed memory of a burst returns it, whatever
// it allocated since the last return; the free room a steady heap keeps
// (about the live heap) asks for nothing.
func TestMemoryReturnerOnIdleAfterBurst(t *testing.T) {
	cases := []struct {
		name       string
		free, live int64
		want       bool
	}{
		{"steady: free about the live heap", 100 << 20, 100 << 20, false},
		{"steady: free just under twice live", 2*(100<<20) - 1, 100 << 20, false},
		{"burst ended: free over twice live", 2*(100<<20) + 1, 100 << 20, true},
		{"small heap: free over twice live, under idleGrowth", idleGrowth, 1 << 20, false},
		{"small live heap, burst freed", idleGrowth + 1, 1 << 20, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemoryReturner()
			var scheduled []func()
			m.after = func(_ time.Duration, f func()) { scheduled = append(scheduled, f) }
			m.heap = func() heapState { return heapState{free: tc.free, live: tc.live} }
			now := time.Unix(0, 0)
			m.now = func() time.Time { now = now.Add(idleCheckInterval); return now }
			m.released(0, false)
			if len(scheduled) != 0 {
				t.Fatalf("a busy server scheduled a return")
			}
			m.released(0, true)
			if got := len(scheduled) == 1; got != tc.want {
				t.Fatalf("free %d MiB, live %d MiB: return scheduled %v, want %v", tc.free>>20, tc.live>>20, got, tc.want)
			}
		})
	}
}
