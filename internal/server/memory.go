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

// idleGrowth is how much must have been allocated since the last return
// for a server going idle to ask for one: garbage the runtime may still
// hold, since an idle server does not collect.
const idleGrowth = 64 << 20

// idleCheckInterval spaces the idle checks: reading the runtime's
// allocation counter costs about 300 ns, and a client that sends one
// request at a time makes the server go idle after every one.
const idleCheckInterval = 100 * time.Millisecond

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
// connection drops a big buffer, or the server goes idle after allocating
// much. The Go runtime returns freed pages lazily and an idle server
// collects rarely (every two minutes), so without it the memory of a burst
// (47 MB messages, big aggregates) stays resident long after the last
// reference to it was dropped. Requests within one interval share a single
// return.
type memoryReturner struct {
	pending atomic.Bool
	// allocsAtReturn is the bytes allocated since start as of the last
	// return, lastCost how long that return took.
	allocsAtReturn atomic.Int64
	lastCost       atomic.Int64
	// idleCheckedAt is when (UnixNano) an idle server last compared its
	// allocations.
	idleCheckedAt atomic.Int64
	// after, free, allocs and now are time.AfterFunc, debug.FreeOSMemory,
	// allocatedBytes and time.Now, replaced in tests.
	after  func(time.Duration, func())
	free   func()
	allocs func() int64
	now    func() time.Time
}

func newMemoryReturner() *memoryReturner {
	return &memoryReturner{
		after:  func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:   debug.FreeOSMemory,
		allocs: allocatedBytes,
		now:    time.Now,
	}
}

// allocatedBytes is the bytes the Go heap has allocated since start.
func allocatedBytes() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// released notes that a connection going idle dropped n bytes of buffers,
// and whether it was the last one active.
func (m *memoryReturner) released(n int, serverIdle bool) {
	if n >= bigRelease || serverIdle && m.idleCheckDue() && m.allocs() > m.allocsAtReturn.Load()+idleGrowth {
		m.schedule()
	}
}

// idleCheckDue reports whether idleCheckInterval has passed since the last
// idle check, and if so claims this one.
func (m *memoryReturner) idleCheckDue() bool {
	now := m.now().UnixNano()
	last := m.idleCheckedAt.Load()
	return now-last >= int64(idleCheckInterval) && m.idleCheckedAt.CompareAndSwap(last, now)
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
		m.allocsAtReturn.Store(m.allocs())
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
