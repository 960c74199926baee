package rescache

import (
	"math"
	"time"
)

// Warming a group. An equality range is read from storage on its first
// lookup: in an index whose values are each looked up after a while (a
// session's token, first read some time after its login was written, or
// every session after a restart) nearly every first lookup opens an
// iterator over the whole LSM. After such a miss the engine may warm the
// range's group instead (BeginWarm): one scan of the index in key order,
// its ranges kept while the cache has spare room, so that the lookups to
// come find them resident. A scan costs a fraction of a seek per range.
//
// A warm-up reads a chunk of ranges after taking a WarmTicket, and keeps
// each (Warm) only while no write into the bucket has begun or ended
// since, and no InvalidateRange has run: a write that overlapped the read
// may have changed a range the chunk read before it, and its own drop of
// the range may have come before the keep. The engine reads the chunk
// again after a refusal.

// warmEvery is how long a bucket's groups wait after a warm-up before
// another may begin: a warm-up of an index the cache cannot hold stops
// at the first range that does not fit, and trying again sooner would
// only scan it again. After a warm-up that kept less than an eighth of
// the ranges it read (its index was mostly resident already) the wait
// doubles, up to maxWarmGap: an index the cache holds is not scanned
// through every half minute for the few values written since.
const (
	warmEvery  = 30 * time.Second
	maxWarmGap = 16 * warmEvery
)

// WarmTicket is taken before a warm-up reads a chunk of ranges.
type WarmTicket struct {
	group  *rangeGroup
	writes uint64
}

// BeginWarm reports whether the group of the range at lo (a Cacheable
// lower bound) may be warmed now, and returns the group's prefix (the
// policy's RangeGroupLen bytes of lo): one warm-up per bucket at a time,
// and none within the wait EndWarm set. EndWarm must follow.
func (c *Cache) BeginWarm(lo []byte) (prefix []byte, ok bool) {
	n := c.policy.Load().RangeGroupLen
	if c.maxBytes == 0 || n <= 0 || len(lo) < n {
		return nil, false
	}
	g := &c.groups[c.groupOf(lo)]
	next := g.nextWarm.Load()
	if c.Now() < next || !g.nextWarm.CompareAndSwap(next, math.MaxInt64) {
		return nil, false
	}
	g.fullShards.Store(0)
	return append([]byte(nil), lo[:n]...), true
}

// EndWarm ends the warm-up of the group prefix names, which read ranges
// and kept kept of them, and sets the wait before the next.
func (c *Cache) EndWarm(prefix []byte, read, kept int) {
	g := &c.groups[c.groupOf(prefix)]
	gap := int64(warmEvery)
	if last := g.warmGap.Load(); last != 0 && 8*kept < read {
		gap = min(2*last, int64(maxWarmGap))
	}
	g.warmGap.Store(gap)
	g.nextWarm.Store(c.Now() + gap)
	c.warmUps.Add(1)
}

// TakeWarmTicket is taken before reading a chunk of the group prefix
// names, from storage as it is after this call.
func (c *Cache) TakeWarmTicket(prefix []byte) WarmTicket {
	g := &c.groups[c.groupOf(prefix)]
	return WarmTicket{group: g, writes: g.writes.Load()}
}

// EqualityLen is the length of the equality prefix (a range's lower
// bound) of the index entry key, by the policy; ok is false for a key in
// no range.
func (c *Cache) EqualityLen(key []byte) (int, bool) {
	p := c.policy.Load()
	if p.EqualityLen == nil {
		return 0, false
	}
	n, ok := p.EqualityLen(key)
	return n, ok && n <= len(key)
}

// WarmResult is what Warm did with a range.
type WarmResult uint8

const (
	// WarmKept: the range is resident now.
	WarmKept WarmResult = iota
	// WarmHeld: the range was resident already (a read filled it).
	WarmHeld
	// WarmStale: a write or an InvalidateRange came after the ticket; the
	// chunk is to be read again under a new one.
	WarmStale
	// WarmSkipped: the range's shard has no spare room; others have.
	WarmSkipped
	// WarmFull: no shard has spare room; the warm-up is over.
	WarmFull
	// WarmUnfit: the range is not one the cache holds (too many
	// entries, or not an equality prefix).
	WarmUnfit
)

// Warm keeps entries as the whole range at lo, read under t, while the
// range's shard has spare room (a warm-up never evicts what reads
// brought in) and no write reached the bucket since t was taken. A range
// whose shard is full is skipped until the warm-up has found every shard
// full: shards fill unevenly, and a warm-up that ended at the first full
// one left a quarter of a session store's tokens out of a cache that
// could hold nearly all of them. Full means without room for a range the
// warm-up read: a smaller range may still have fitted when it ends.
func (c *Cache) Warm(t WarmTicket, lo []byte, entries []KV) WarmResult {
	at, ok := c.rangeSlotOf(lo, entries)
	if !ok {
		return WarmUnfit
	}
	sh := at.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case t.group != &c.groups[at.group] || t.group.writes.Load() != t.writes:
		return WarmStale
	case sh.find(true, at.hash, plainKey(lo)) != noSlot:
		return WarmHeld // filled by a read, from the same state or a later one
	case !sh.hasRoom(at.n + itemOverhead):
		bit := uint32(1) << (at.hash % shardCount)
		if t.group.fullShards.Or(bit)|bit == allShards {
			return WarmFull
		}
		return WarmSkipped
	}
	c.addLocked(sh, at.entry(lo, entries))
	c.warmed.Add(1)
	return WarmKept
}
