// Package bgyield decides how CPU-bound background work (pebble's flushes
// and compactions, the resident cache's warm-ups) gives the thread back to
// requests, including requests that are still in the kernel's socket
// buffers.
//
// Yielding with runtime.Gosched is not enough for those. Go's scheduler
// polls the network only when it finds nothing else to run; a background
// writer that yields is at once runnable again, so on a server with one
// scheduler thread the run queue never empties while it works, and the
// requests that arrived meanwhile wait for the runtime's monitor, which
// polls every 10 ms. A Yielder watches the bytes read from clients: while
// they move, requests are getting through and a yield is a Gosched; when
// they stop moving though clients were active a moment ago, background
// work has held the thread for a budget and pauses on a timer, so that the
// scheduler runs out of work and polls (docs/design/0002, "Background work
// and the scheduler").
package bgyield

import (
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

const (
	// budget is how long background work may keep the thread while the
	// network is not being read and clients were active.
	budget = 500 * time.Microsecond
	// active is how recently bytes must have arrived for clients to count
	// as active: longer than the runtime monitor's 10 ms poll, which moves
	// the bytes even while background work starves the scheduler's own.
	active = 50 * time.Millisecond
	// pause is how long background work parks. Any pause lets the
	// scheduler reach its poll once the requests it has run out; a short
	// one gives the thread back soon when nothing is waiting.
	pause = 50 * time.Microsecond
)

// Yielder is a background writer's yield. Its zero value is not usable;
// New makes one.
type Yielder struct {
	clock   clock.Clock
	start   time.Time // times below are since start, so the clock's monotonic reading
	gosched func()
	// traffic returns the bytes read from clients so far; nil until
	// Watch, and then every yield is a Gosched.
	traffic atomic.Pointer[func() int64]
	seen    atomic.Int64 // traffic at the last yield
	// movedAt is when, in nanoseconds since start, a yield last saw the
	// traffic move, and pausedAt when background work last paused.
	movedAt, pausedAt atomic.Int64
	pauses            atomic.Int64 // for Pauses
}

// New returns a Yielder that reads time from c and yields with gosched
// (runtime.Gosched outside tests).
func New(c clock.Clock, gosched func()) *Yielder {
	return &Yielder{clock: c, start: c.Now(), gosched: gosched}
}

// Watch sets where the Yielder reads the bytes received from clients.
func (y *Yielder) Watch(traffic func() int64) { y.traffic.Store(&traffic) }

// Pauses returns how many times background work paused.
func (y *Yielder) Pauses() int64 { return y.pauses.Load() }

// Yield gives the thread to requests: a Gosched, or a pause when the
// network has not been read for a budget while clients were active.
func (y *Yielder) Yield() {
	if y.mustPause() {
		y.pauses.Add(1)
		t := y.clock.NewTimer(pause)
		<-t.C()
		return
	}
	y.gosched()
}

func (y *Yielder) mustPause() bool {
	traffic := y.traffic.Load()
	if traffic == nil {
		return false
	}
	now := int64(y.clock.Now().Sub(y.start))
	if n := (*traffic)(); n != y.seen.Load() {
		y.seen.Store(n)
		y.movedAt.Store(now)
		return false
	}
	moved := y.movedAt.Load()
	if time.Duration(now-moved) > active {
		return false // no client is waiting: full speed
	}
	if time.Duration(now-max(moved, y.pausedAt.Load())) < budget {
		return false
	}
	y.pausedAt.Store(now)
	return true
}
