package clock

import (
	"testing"
	"time"
)

func TestManualTimersFireWhenTheClockPassesThem(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewManual(start)
	early, late := c.NewTimer(time.Second), c.NewTimer(time.Minute)
	if c.Pending() != 2 {
		t.Fatalf("pending %d", c.Pending())
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	if got := <-early.C(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("fired at %v", got)
	}
	if !late.Stop() || late.Stop() || c.Pending() != 0 {
		t.Fatal("Stop removes a pending timer once")
	}
	late.Reset(0)
	select {
	case <-late.C():
	default:
		t.Fatal("a zero reset fires at once")
	}
}

func TestAtIsWhatTheClockReadsWithTheSteadyReading(t *testing.T) {
	m := NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	o := &Offset{Base: m}
	o.Set(time.Hour)
	steady := Unoffset(o).Now()
	if got := At(o, steady); !got.Equal(o.Now()) {
		t.Fatalf("At(offset clock) = %v, the clock reads %v", got, o.Now())
	}
	if got := At(m, steady); !got.Equal(steady) {
		t.Fatalf("At(a clock without offset) = %v, want its reading %v", got, steady)
	}
}

func TestRealReadingOnlyOfTheRealClock(t *testing.T) {
	now := time.Now()
	if got := RealReading(Real{}, now); !got.Equal(now) {
		t.Fatalf("the real clock's reading is real: %v", got)
	}
	for _, c := range []Clock{NewManual(now), Skewed{Base: Real{}, Offset: time.Hour}, &Offset{Base: Real{}}} {
		if got := RealReading(c, now); !got.IsZero() {
			t.Fatalf("%T: %v, want zero", c, got)
		}
	}
}
