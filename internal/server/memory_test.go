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

	m.dropped(bigRelease - 1)
	if len(scheduled) != 0 {
		t.Fatalf("a %d-byte drop scheduled a return", bigRelease-1)
	}
	m.dropped(bigRelease)
	m.dropped(10 * bigRelease)
	if len(scheduled) != 1 || delays[0] != returnInterval {
		t.Fatalf("two big drops scheduled %d returns (delays %v), want 1 after %v", len(scheduled), delays, returnInterval)
	}
	scheduled[0]()
	if frees != 1 {
		t.Fatalf("%d returns ran, want 1", frees)
	}
	m.dropped(bigRelease)
	if len(scheduled) != 2 {
		t.Fatalf("a big drop after the return scheduled %d in all, want 2", len(scheduled))
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
