package bench

import (
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	for _, ns := range []int64{0, 1, 31, 32, 33, 63, 64, 65, 1000, 123456789, 1 << 40} {
		b := bucketOf(ns)
		if lo, hi := bucketLow(b), bucketLow(b+1); ns < lo || ns >= hi {
			t.Errorf("%d in bucket %d = [%d, %d)", ns, b, lo, hi)
		}
	}
}

func TestQuantile(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Add(time.Duration(i) * time.Microsecond)
	}
	check := func(q float64, want time.Duration) {
		got := h.Quantile(q)
		if d := got - want; d < -want/20 || d > want/20 {
			t.Errorf("q%.2f = %v, want about %v", q, got, want)
		}
	}
	check(0.5, 500*time.Microsecond)
	check(0.99, 990*time.Microsecond)
	if h.Max() != time.Millisecond {
		t.Errorf("max %v", h.Max())
	}
}
