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
// hold, since an idle server does not collect. It is also the least free
// heap an idle server returns at once (see heapState.burstEnded).
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
// much or holding a burst's freed memory. The Go runtime returns freed pages lazily and an idle server
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
	// after, free, heap and now are time.AfterFunc, debug.FreeOSMemory,
	// readHeapState and time.Now, replaced in tests.
	after func(time.Duration, func())
	free  func()
	heap  func() heapState
	now   func() time.Time
}

func newMemoryReturner() *memoryReturner {
	return &memoryReturner{
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
		heap:  readHeapState,
		now:   time.Now,
	}
}

// heapState is the Go heap as the runtime's metrics give it, in bytes.
type heapState struct {
	// allocated is what the heap has allocated since start; free is
	// collected memory still held from the system; live is what the last
	// collection marked.
	allocated, free, live int64
}

// burstEnded reports whether the heap holds much more freed memory than
// its steady state would: after a collection the runtime keeps about the
// live heap again as free room to grow into, and its background scavenger
// keeps up to the goal of the last collection before the burst's garbage
// was found, so the memory of a burst that ended stays resident until a
// return.
func (h heapState) burstEnded() bool {
	return h.free > idleGrowth && h.free > 2*h.live
}

func readHeapState() heapState {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return heapState{allocated: v(0), free: v(1), live: v(2)}
}

// released notes that a connection going idle dropped n bytes of buffers,
// and whether it was the last one active.
func (m *memoryReturner) released(n int, serverIdle bool) {
	if n >= bigRelease || serverIdle && m.idleCheckDue() && m.idleReturnDue() {
		m.schedule()
	}
}

// idleReturnDue reports whether an idle server holds memory worth a
// return: garbage from much allocation since the last one, or the freed
// memory of a burst.
func (m *memoryReturner) idleReturnDue() bool {
	h := m.heap()
	return h.allocated > m.allocsAtReturn.Load()+idleGrowth || h.burstEnded()
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
