package server

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// bigRelease is the size of dropped buffers from which a connection asks
// for freed memory to go back to the system at once. Smaller buffers are
// left to the runtime's background scavenger.
const bigRelease = 4 << 20

// idleGrowth is how much must have been allocated since the last return,
// or be held freed, for a quiet server to ask for one: garbage the runtime
// may still hold (a server without requests does not collect), or the
// freed memory of a burst, which the runtime keeps as room to grow into
// until a collection with a smaller heap lowers its goal.
const idleGrowth = 64 << 20

// quietPeriod is how long a server must have run no request before it
// looks at its heap: a client sending one request at a time makes the
// server idle after each, and it must neither read the runtime's
// counters nor force a collection for every one.
const quietPeriod = 500 * time.Millisecond

// returnInterval is the shortest time between two forced returns: each
// is a full collection, so a stream of big messages costs at most one per
// interval. With a large live heap a collection takes longer, and the
// interval grows to costFactor times the last return's duration, so that
// forced returns never take more than about a tenth of the time.
const (
	returnInterval = time.Second
	costFactor     = 10
)

// memoryReturner gives freed memory back to the system soon after a
// connection drops a big buffer, or the server stays quiet for a
// quietPeriod holding much garbage or freed memory. The Go runtime returns
// freed pages lazily and a quiet server collects rarely (every two
// minutes), so without it the memory of a burst (47 MB messages, big
// aggregates) stays resident long after the last reference to it was
// dropped. Requests within one interval share a single return.
type memoryReturner struct {
	pending atomic.Bool
	// allocsAtReturn is the bytes allocated since start as of the last
	// return, lastCost how long that return took.
	allocsAtReturn atomic.Int64
	lastCost       atomic.Int64
	// ends counts requests ended; quietArmed is set while a quiet check
	// is waiting for its period to pass.
	ends       atomic.Uint64
	quietArmed atomic.Bool
	// idle reports whether no request is running.
	idle func() bool
	// after, free, heap and now are time.AfterFunc, debug.FreeOSMemory,
	// readHeapState and time.Now, replaced in tests.
	after func(time.Duration, func())
	free  func()
	heap  func() heapState
	now   func() time.Time
}

func newMemoryReturner(idle func() bool) *memoryReturner {
	return &memoryReturner{
		idle:  idle,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
		heap:  readHeapState,
		now:   time.Now,
	}
}

// heapState is the Go heap as the runtime's metrics give it, in bytes.
type heapState struct {
	// allocated is what the heap has allocated since start; free is
	// collected memory still held from the system.
	allocated, free int64
}

func readHeapState() heapState {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return heapState{allocated: v(0), free: v(1)}
}

// released notes that a connection's request ended and it dropped n bytes
// of buffers, and whether it was the last one active.
func (m *memoryReturner) released(n int, serverIdle bool) {
	end := m.ends.Add(1)
	switch {
	case n >= bigRelease:
		m.schedule()
	case serverIdle:
		m.armQuiet(end)
	}
}

// armQuiet starts a quiet check unless one is waiting: the request path
// pays an atomic operation, and a timer at most every quietPeriod.
func (m *memoryReturner) armQuiet(end uint64) {
	if m.quietArmed.CompareAndSwap(false, true) {
		m.after(quietPeriod, func() { m.quietCheck(end) })
	}
}

// quietCheck runs a quietPeriod after the check was armed, when the last
// request seen then was end. If none ended since and none runs, the server
// has been quiet all along, and returns memory if it holds much; if some
// ended and the server is idle again, it waits a period from now.
func (m *memoryReturner) quietCheck(end uint64) {
	now, idle := m.ends.Load(), m.idle()
	if idle && now != end {
		m.after(quietPeriod, func() { m.quietCheck(now) })
		return
	}
	// Disarmed before anything else: a request that ends from here on
	// arms its own check.
	m.quietArmed.Store(false)
	if idle {
		if h := m.heap(); h.allocated > m.allocsAtReturn.Load()+idleGrowth || h.free > idleGrowth {
			m.schedule()
		}
		return
	}
	// Busy at the check: a request that ended since it looked found the
	// check still armed, so it is armed again here.
	if m.idle() {
		m.armQuiet(m.ends.Load())
	}
}

func (m *memoryReturner) schedule() {
	if !m.pending.CompareAndSwap(false, true) {
		return
	}
	m.after(max(returnInterval, costFactor*time.Duration(m.lastCost.Load())), func() {
		// Cleared first: a buffer dropped during the collection asks for
		// the next one.
		m.pending.Store(false)
		start := m.now()
		m.free()
		m.lastCost.Store(int64(m.now().Sub(start)))
		m.allocsAtReturn.Store(m.heap().allocated)
	})
}

// connBuffers tracks the buffer memory a connection holds between
// requests, published to the server-wide total.
type connBuffers struct {
	total     *atomic.Int64
	published int64
}

func (b *connBuffers) set(held int64) {
	if held != b.published {
		b.total.Add(held - b.published)
		b.published = held
	}
}
