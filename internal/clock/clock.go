// Package clock gives time-based code an injected source of "now", so that
// TTL expiry and timeouts are tested by moving a manual clock instead of
// sleeping.
package clock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of time.Timer that clock users need.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Manual is a clock that moves only when told to. Timers fire when Advance
// or Set moves the time past their deadline.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManual returns a manual clock set to start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the manual time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and fires due timers.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t and fires due timers.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	m.now = t
	var keep []*manualTimer
	var due []*manualTimer
	for _, tm := range m.timers {
		if !tm.deadline.After(t) {
			due = append(due, tm)
		} else {
			keep = append(keep, tm)
		}
	}
	m.timers = keep
	m.mu.Unlock()
	for _, tm := range due {
		select {
		case tm.c <- t:
		default:
		}
	}
}

// Pending reports how many timers wait on the clock, so a test can move
// the clock only once the code under test has armed its timer.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

// NewTimer returns a timer on the manual clock.
func (m *Manual) NewTimer(d time.Duration) Timer {
	tm := &manualTimer{clock: m, c: make(chan time.Time, 1)}
	tm.Reset(d)
	return tm
}

type manualTimer struct {
	clock    *Manual
	deadline time.Time
	c        chan time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	m := t.clock
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.timers {
		if x == t {
			m.timers = append(m.timers[:i], m.timers[i+1:]...)
			return true
		}
	}
	return false
}

func (t *manualTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	m := t.clock
	m.mu.Lock()
	t.deadline = m.now.Add(d)
	if d <= 0 {
		m.mu.Unlock()
		select {
		case t.c <- t.deadline:
		default:
		}
		return active
	}
	m.timers = append(m.timers, t)
	m.mu.Unlock()
	return active
}

// Skewed is a clock that reads Base shifted by Offset: a server started
// with a skewed clock, to test what the replica set does about clocks
// that disagree. Timers are the base clock's (durations do not skew).
type Skewed struct {
	Base   Clock
	Offset time.Duration
}

// Now implements Clock.
func (s Skewed) Now() time.Time { return s.Base.Now().Add(s.Offset) }

// NewTimer implements Clock.
func (s Skewed) NewTimer(d time.Duration) Timer { return s.Base.NewTimer(d) }

// Offset is a clock that reads Base moved ahead by an offset that can be
// changed while the server runs: the test clock an application's test
// suite sets (mayflyClockOffsetSeconds) to see expiry without sleeping.
type Offset struct {
	Base Clock
	off  atomic.Int64 // nanoseconds
}

// Now implements Clock.
func (o *Offset) Now() time.Time { return o.Base.Now().Add(time.Duration(o.off.Load())) }

// NewTimer implements Clock; durations are not offset.
func (o *Offset) NewTimer(d time.Duration) Timer { return o.Base.NewTimer(d) }

// Set moves the clock to Base plus d.
func (o *Offset) Set(d time.Duration) { o.off.Store(int64(d)) }

// Get is the current offset.
func (o *Offset) Get() time.Duration { return time.Duration(o.off.Load()) }

// At is what c reads at the instant its Unoffset clock read t, so that
// one reading serves both: a request's latency by the steady clock, and
// when it began by the server's.
func At(c Clock, t time.Time) time.Time {
	if o, ok := c.(*Offset); ok {
		return t.Add(o.Get())
	}
	return t
}

// RealReading is t when c is the real clock, the zero time otherwise: a
// reading of c that may stand for time.Now, for code that measures real
// time (maxTimeMS) even under a manual or skewed clock.
func RealReading(c Clock, t time.Time) time.Time {
	if _, ok := c.(Real); ok {
		return t
	}
	return time.Time{}
}

// Unoffset is c without the test clock's offset: the clock of resource
// timeouts (idle cursors), which a test suite that moves the clock to see
// documents expire must not set off.
func Unoffset(c Clock) Clock {
	if o, ok := c.(*Offset); ok {
		return o.Base
	}
	return c
}

// Sleep waits d on c's timer, and reports false if ctx ended first.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}
