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

func TestSteadyRateIgnoresTheStartAndTheTail(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []ttlSample{
		{recv: at(0), deleted: 50},     // before the burst: the counter's base
		{recv: at(100), deleted: 50},   // waiting for the first pass
		{recv: at(200), deleted: 1050}, // first deletions
		{recv: at(700), deleted: 6050}, // 5000 in 0.5 s while a backlog remains
		{recv: at(900), deleted: 7050}, // all 7000 gone: the tail is not measured
	}
	if got := steadyRate(samples, 7000); got != 10000 {
		t.Fatalf("steady rate %v, want 10000/s", got)
	}
	if got := steadyRate(samples[:3], 7000); got != 0 {
		t.Fatalf("one sample with a backlog gives no rate, got %v", got)
	}
}

func TestCatchUpsOverTheSamples(t *testing.T) {
	samples := []ttlSample{{catchUps: 40}, {catchUps: 40}, {catchUps: 52}, {catchUps: 97}}
	if got := catchUpsOver(samples); got != 57 {
		t.Fatalf("catch-up batches %d, want 57", got)
	}
	if got := catchUpsOver(samples[:1]); got != 0 {
		t.Fatalf("one sample: %d, want 0", got)
	}
}
