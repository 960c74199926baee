package rescache

import (
	"hash/maphash"
	"sync/atomic"
)

// pendingFilter marks, one bit per hash, the hashes of pending values,
// so that IsPending answers for a key whose bit is clear without taking
// the shard's lock. While touches are held back, every deletion of a
// document asks it, and an expiry storm's documents are almost never
// pending: the locked lookups were a third of the monitor's commits
// (docs/design/0002). Each shard owns a run of the bits; a value that
// stops being pending leaves its bit set, and the shard's bits are
// cleared together when it holds no pending value (its flush settled
// it), so a stale bit costs one locked lookup, never a wrong answer.
// Bits, not counters, because the filter is read once per deletion on
// the monitor's core and must stay in that core's cache.
//
// Before the bits, it counts the pending values of each bucket of groups
// (Policy.PendingGroupLen): a deletion in a collection none of whose
// documents is pending, as an expiry storm's in a store whose touches
// go to another, reads one counter that stays in the core's cache.
type pendingFilter struct {
	words []atomic.Uint64
	per   uint64 // words per shard, a power of two
	// groups counts the pending values of each bucket of groups, whose
	// prefixes of groupLen bytes hash, with seed, to the bucket.
	groups   [pendingGroupBuckets]atomic.Int32
	groupLen int
	seed     maphash.Seed
}

// pendingGroupBuckets spreads the groups: two collections in one bucket
// only ask the bits for each other's keys.
const pendingGroupBuckets = 64

// pendingBytesPerBit is the cache bytes per bit: as many pending values
// as the flush lets the cache hold (half its bytes, entries of a few
// hundred bytes) set about one bit in ten.
const pendingBytesPerBit = 64

// newPendingFilter sizes a filter for a cache of maxBytes: a power of
// two of words per shard, at least one. Groups are groupLen bytes long.
func newPendingFilter(maxBytes int64, groupLen int, seed maphash.Seed) *pendingFilter {
	per := uint64(1)
	for per*64*shardCount < uint64(maxBytes/pendingBytesPerBit) {
		per <<= 1
	}
	return &pendingFilter{words: make([]atomic.Uint64, per*shardCount), per: per, groupLen: groupLen, seed: seed}
}

// group is the counter of key's bucket of groups.
func (f *pendingFilter) group(key []byte) *atomic.Int32 {
	return &f.groups[prefixBucket(f.seed, key, f.groupLen, pendingGroupBuckets)]
}

// groupMaybe reports whether a pending value may be in key's group.
func (f *pendingFilter) groupMaybe(key []byte) bool { return f.group(key).Load() != 0 }

// at is the word and the bit of hash. The low bits pick the shard
// (hash % shardCount), the bits above them the bit in its run.
func (f *pendingFilter) at(hash uint64) (*atomic.Uint64, uint64) {
	shard, rest := hash%shardCount, hash/shardCount
	i := rest / 64 & (f.per - 1)
	return &f.words[shard*f.per+i], 1 << (rest % 64)
}

// mark sets hash's bit.
func (f *pendingFilter) mark(hash uint64) {
	w, bit := f.at(hash)
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
}

// maybe reports whether a pending value may have hash.
func (f *pendingFilter) maybe(hash uint64) bool {
	w, bit := f.at(hash)
	return w.Load()&bit != 0
}

// clearShard clears shard n's bits. Its lock is held, and it holds no
// pending value.
func (f *pendingFilter) clearShard(n uint64) {
	run := f.words[n*f.per : (n+1)*f.per]
	for i := range run {
		if run[i].Load() != 0 {
			run[i].Store(0)
		}
	}
}

// pendingFilterOf is c's filter, made by the first value set pending:
// a cache the write-behind never uses holds none.
func (c *Cache) pendingFilterOf() *pendingFilter {
	if f := c.pendFilter.Load(); f != nil {
		return f
	}
	c.pendFilter.CompareAndSwap(nil, newPendingFilter(c.maxBytes, c.policy.Load().PendingGroupLen, c.seed))
	return c.pendFilter.Load()
}
