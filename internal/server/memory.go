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

// idleGrowth is how much the Go heap (objects and free pages) must have
// grown since the last return for a server going idle to ask for one.
const idleGrowth = 64 << 20

// returnInterval is the shortest time between two forced returns: each
// is a full collection, so a stream of big messages costs at most one per
// interval.
const returnInterval = time.Second

// memoryReturner gives freed memory back to the system soon after a
// connection drops a big buffer, or the server goes idle after its heap
// grew. The Go runtime returns freed pages lazily and an idle server
// collects rarely (every two minutes), so without it the memory of a burst
// (47 MB messages, big aggregates) stays resident long after the last
// reference to it was dropped. Requests within one interval share a single
// return.
type memoryReturner struct {
	pending atomic.Bool
	// heapAfter is the heap's size after the last return.
	heapAfter atomic.Int64
	// after, free and heap are time.AfterFunc, debug.FreeOSMemory and
	// heapBytes, replaced in tests.
	after func(time.Duration, func())
	free  func()
	heap  func() int64
}

func newMemoryReturner() *memoryReturner {
	return &memoryReturner{
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
		heap:  heapBytes,
	}
}

// heapBytes is the resident part of the Go heap: objects, live or not yet
// collected, and free pages not yet returned.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	var n int64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += int64(v.Value.Uint64())
		}
	}
	return n
}

// released notes that a connection going idle dropped n bytes of buffers,
// and whether it was the last one active.
func (m *memoryReturner) released(n int, serverIdle bool) {
	if n >= bigRelease || serverIdle && m.heap() > m.heapAfter.Load()+idleGrowth {
		m.schedule()
	}
}

func (m *memoryReturner) schedule() {
	if !m.pending.CompareAndSwap(false, true) {
		return
	}
	m.after(returnInterval, func() {
		// Cleared first: a buffer dropped during the collection asks for
		// the next one.
		m.pending.Store(false)
		m.free()
		m.heapAfter.Store(m.heap())
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
