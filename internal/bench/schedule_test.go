package bench

import (
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	s := newSchedule(1000, 10*time.Second)
	first := s.startAtOrAfter(s.anchor.Add(2500 * time.Millisecond))
	if s.after != 3*time.Second || !first.Equal(s.anchor.Add(3*time.Second)) {
		t.Fatalf("after %v, first %v", s.after, first.Sub(s.anchor))
	}
	if got := s.expiry(999).Sub(s.expiry(0)); got != 9990*time.Millisecond {
		t.Errorf("span %v", got)
	}
	if k := s.expiredBy(first.Add(-time.Millisecond)); k != 0 {
		t.Errorf("before start: %d", k)
	}
	if k := s.expiredBy(first); k != 1 {
		t.Errorf("at start: %d", k)
	}
	if k := s.expiredBy(first.Add(5 * time.Second)); k != 501 {
		t.Errorf("halfway: %d", k)
	}
	if k := s.expiredBy(first.Add(time.Hour)); k != 1000 {
		t.Errorf("after: %d", k)
	}
}
