package server

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// bigRelease is the size of dropped buffers from which a connection asks
// for freed memory to go back to the system at once. Smaller buffers are
// left to the runtime's background scavenger.
const bigRelease = 4 << 20

// returnInterval is the shortest time between two forced returns: each
// is a full collection, so a stream of big messages costs at most one per
// interval.
const returnInterval = time.Second

// memoryReturner gives freed memory back to the system soon after a
// connection drops a big buffer. The Go runtime returns freed pages lazily,
// and an idle server collects rarely, so without it the memory of a burst
// of 47 MB messages stays resident long after every buffer was dropped.
// Requests within one interval share a single return.
type memoryReturner struct {
	pending atomic.Bool
	// after and free are time.AfterFunc and debug.FreeOSMemory, replaced
	// in tests.
	after func(time.Duration, func())
	free  func()
}

func newMemoryReturner() *memoryReturner {
	return &memoryReturner{
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		free:  debug.FreeOSMemory,
	}
}

// dropped notes that n bytes of buffers were just dropped.
func (m *memoryReturner) dropped(n int) {
	if n < bigRelease || !m.pending.CompareAndSwap(false, true) {
		return
	}
	m.after(returnInterval, func() {
		// Cleared first: a buffer dropped during the collection asks for
		// the next one.
		m.pending.Store(false)
		m.free()
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
