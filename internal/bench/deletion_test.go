package bench

import (
	"testing"
	"time"
)

// Samples every 10 ms of a server that deletes each document exactly
// 100 ms after it expires.
func TestDeletionLateness(t *testing.T) {
	s := newSchedule(1000, time.Second)
	first := s.startAtOrAfter(s.anchor)
	var samples []ttlSample
	for at := first.Add(-50 * time.Millisecond); at.Before(first.Add(1500 * time.Millisecond)); at = at.Add(10 * time.Millisecond) {
		deleted := s.expiredBy(at.Add(-100 * time.Millisecond))
		samples = append(samples, ttlSample{sent: at, recv: at.Add(time.Millisecond), deleted: int64(deleted) + 5})
	}
	l := deletionLateness(samples, s)
	if l.Deleted != 1000 {
		t.Fatalf("deleted %d", l.Deleted)
	}
	if l.Upper.P99Ms < 100 || l.Upper.P99Ms > 115 || l.Lower.P99Ms > 100 || l.Lower.P99Ms < 85 {
		t.Errorf("p99 bracket [%v, %v] should hold 100 ms", l.Lower.P99Ms, l.Upper.P99Ms)
	}
	if l.PerSec < 950 || l.PerSec > 1050 {
		t.Errorf("rate %v, want about 1000/s", l.PerSec)
	}
}

func TestPickOpMix(t *testing.T) {
	var n [numOps]int
	for pct := range 100 {
		n[pickOp(pct)]++
	}
	if n != [numOps]int{70, 20, 5, 5} {
		t.Errorf("mix %v", n)
	}
}
