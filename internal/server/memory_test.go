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
	m.allocs = func() int64 { return 0 }

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
	m.allocs = func() int64 { return 0 }

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
	m.allocs = func() int64 { return allocated }
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
	m.allocs = func() int64 { reads++; return 0 }
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
