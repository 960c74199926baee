package rescache

import "sync/atomic"

// pendingFilter counts pending values by their hashes, in byte-wide
// counters four to a word, so that IsPending answers for a key no
// pending value shares a counter with without taking the shard's lock.
// While touches are held back, every deletion of a document asks it,
// and an expiry storm's documents are almost never pending: the locked
// lookups were a third of the monitor's commits (docs/design/0002). A
// counter that reaches 255 stays there, answering "maybe" for good,
// rather than wrap.
type pendingFilter struct {
	words []atomic.Uint32
	mask  uint64 // counters - 1
}

// pendingCountersPer is the cache bytes per counter: with the filter at
// a 64th of the cache's size, as many pending values as the flush lets
// the cache hold (half its bytes, entries of a few hundred bytes) leave
// nine in ten counters at zero.
const pendingCountersPer = 64

// newPendingFilter sizes a filter for a cache of maxBytes: a power of
// two of counters, at least 1024.
func newPendingFilter(maxBytes int64) *pendingFilter {
	n := uint64(1024)
	for n < uint64(maxBytes/pendingCountersPer) {
		n <<= 1
	}
	return &pendingFilter{words: make([]atomic.Uint32, n/4), mask: n - 1}
}

// at is the word and the bit offset of hash's counter. The bits above
// the shard's (hash % shardCount) pick it.
func (f *pendingFilter) at(hash uint64) (*atomic.Uint32, uint) {
	i := (hash >> 8) & f.mask
	return &f.words[i/4], uint(i%4) * 8
}

// add moves hash's counter by +1 or -1, leaving a saturated one.
func (f *pendingFilter) add(hash uint64, up bool) {
	w, shift := f.at(hash)
	for {
		old := w.Load()
		n := old >> shift & 0xff
		if n == 0xff || (!up && n == 0) {
			return
		}
		next := old + 1<<shift
		if !up {
			next = old - 1<<shift
		}
		if w.CompareAndSwap(old, next) {
			return
		}
	}
}

// maybe reports whether a pending value may have hash.
func (f *pendingFilter) maybe(hash uint64) bool {
	w, shift := f.at(hash)
	return w.Load()>>shift&0xff != 0
}

// pendingFilterOf is c's filter, made by the first value set pending:
// a cache the write-behind never uses holds none.
func (c *Cache) pendingFilterOf() *pendingFilter {
	if f := c.pendFilter.Load(); f != nil {
		return f
	}
	c.pendFilter.CompareAndSwap(nil, newPendingFilter(c.maxBytes))
	return c.pendFilter.Load()
}
