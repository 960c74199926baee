package rescache

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// Value filters. In an index that is not unique, an insert cannot know
// that its value's range holds nothing else, so the range of a value
// written since the last warm-up is read from storage on its first lookup
// (a merging iterator over every level: a session's first touch after its
// login). A filter of the values in one group (an index), kept from the
// moment it is made by every write that sets an entry in the group, and
// filled once by a scan of the group, answers that question: a value it
// has never seen has no entry in storage.
//
// So a lookup of such a value reads nothing (KnownEmpty), and a write that
// sets the first entry of a value (InvalidateSet, whose Claim says so)
// installs its range as holding that entry alone once it has applied
// (WrittenClaimed), unless another write reached the range's shard in
// between. A filter forgets nothing: a deleted value stays (a lookup of
// it reads storage, as without a filter), and one that has taken as many
// new values as it was sized for is dropped, to be made again by the next
// warm-up. The engine makes it (BeginFilter), waits until every commit
// that began before then has ended, scans the group into it (FilterAdd),
// and only then marks it complete (EndFilter): a commit that did not see
// the filter has applied before the scan began, and every later one adds
// its values itself, before its apply.

// filterBitsPerValue and filterProbes give a false positive about one
// lookup in a hundred at the filter's capacity, fewer below it.
const (
	filterBitsPerValue = 10
	filterProbes       = 7
	// filterHeadroom is how many times the values the scan found the
	// filter takes before it is dropped.
	filterHeadroom = 4
	minFilterBits  = 1 << 16
)

// valueFilter is a Bloom filter of the equality prefixes (lower bounds)
// of one group's ranges.
type valueFilter struct {
	prefix   []byte // the group's
	words    []atomic.Uint64
	mask     uint64       // bits - 1
	room     atomic.Int64 // new values it may still take
	complete atomic.Bool  // the scan has ended: every value stored is in it
}

func newValueFilter(prefix []byte, values int) *valueFilter {
	capacity := filterHeadroom * max(values, 1)
	n := uint64(max(capacity*filterBitsPerValue, minFilterBits))
	n = 1 << bits.Len64(n-1) // a power of two: probes are masked
	f := &valueFilter{prefix: bytes.Clone(prefix), words: make([]atomic.Uint64, n/64), mask: n - 1}
	f.room.Store(int64(capacity))
	return f
}

// bytes is the filter's memory.
func (f *valueFilter) bytes() int64 { return int64(len(f.words)) * 8 }

// probes are the bit positions of the value hashed h: double hashing of
// one 64-bit hash.
func (f *valueFilter) probe(h uint64, i int) uint64 {
	return (h + uint64(i)*(h>>33|1)) & f.mask
}

// add sets the value's bits, reporting whether any was clear: a value
// the filter had certainly never seen.
func (f *valueFilter) add(h uint64) (added bool) {
	for i := range filterProbes {
		b := f.probe(h, i)
		m := uint64(1) << (b % 64)
		if f.words[b/64].Or(m)&m == 0 {
			added = true
		}
	}
	return added
}

// mayHold reports whether the value may have been added.
func (f *valueFilter) mayHold(h uint64) bool {
	for i := range filterProbes {
		b := f.probe(h, i)
		if f.words[b/64].Load()&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// filterOf is the filter of the group lo (a range's lower bound) belongs
// to, and the group's bucket; nil when the bucket has none for it.
func (c *Cache) filterOf(lo []byte) (*valueFilter, *rangeGroup) {
	g := &c.groups[c.groupOf(lo)]
	return g.filterFor(lo), g
}

func (c *Cache) valueHash(lo []byte) uint64 { return maphash.Bytes(c.seed, lo) }

// BeginFilter makes an empty filter for the group prefix names, sized
// for values values, unless its bucket has one already; the engine then
// waits for the commits under way to end, scans the group into it
// (FilterAdd) and ends it (EndFilter). From this call on, every write
// that sets an entry in the group adds its value.
func (c *Cache) BeginFilter(prefix []byte, values int) bool {
	if c.maxBytes == 0 {
		return false
	}
	g := &c.groups[c.groupOf(prefix)]
	f := newValueFilter(prefix, values)
	if !g.filter.CompareAndSwap(nil, f) {
		return false
	}
	c.filterBytes.Add(f.bytes())
	return true
}

// FilterAdd adds lo, the lower bound of a range the scan found, to the
// filter being made for its group.
func (c *Cache) FilterAdd(lo []byte) {
	if f, _ := c.filterOf(lo); f != nil {
		f.add(c.valueHash(lo))
	}
}

// EndFilter ends the filter BeginFilter made for the group prefix names:
// complete when the scan read the whole group (ok), dropped otherwise.
func (c *Cache) EndFilter(prefix []byte, ok bool) {
	f, g := c.filterOf(prefix)
	if f == nil || !bytes.Equal(f.prefix, prefix) || f.complete.Load() {
		return // not the one being made
	}
	if ok {
		f.complete.Store(true)
		return
	}
	c.dropFilter(g, f)
}

// HasFilter reports whether the group prefix names has a filter, being
// made or complete.
func (c *Cache) HasFilter(prefix []byte) bool {
	f, _ := c.filterOf(prefix)
	return f != nil && bytes.Equal(f.prefix, prefix)
}

func (c *Cache) dropFilter(g *rangeGroup, f *valueFilter) {
	if g.filter.CompareAndSwap(f, nil) {
		c.filterBytes.Add(-f.bytes())
	}
}

// dropFiltersMeeting drops the filters of the groups [start, end) meets
// (nil bounds: unbounded): storage changed under them in a way their
// writes did not see (a range deletion, a reset).
func (c *Cache) dropFiltersMeeting(start, end []byte) {
	for i := range c.groups {
		if f := c.groups[i].filter.Load(); f != nil && prefixMeets(f.prefix, start, end) {
			c.dropFilter(&c.groups[i], f)
		}
	}
}

// prefixMeets reports whether a key beginning with prefix may lie in
// [start, end): the keys of the prefix are those from it up to, not
// including, the first key above it that does not begin with it.
func prefixMeets(prefix, start, end []byte) bool {
	if end != nil && bytes.Compare(prefix, end) >= 0 {
		return false // every key of the prefix is at or above end
	}
	return start == nil || bytes.Compare(start, prefix) <= 0 || bytes.HasPrefix(start, prefix)
}

// KnownEmpty reports that the range at lo holds no entry in storage: its
// group's filter is complete and has never seen the value. GetRange
// answers such a range as held and empty.
func (c *Cache) KnownEmpty(lo []byte) bool { return c.knownEmpty(lo) }

func (c *Cache) knownEmpty(lo []byte) bool {
	f, _ := c.filterOf(lo)
	return f != nil && f.complete.Load() && !f.mayHold(c.valueHash(lo))
}

// Claim is what InvalidateSet learnt of a write that sets an index entry
// in a group with a filter: the write is counted as under way in the
// group until WrittenClaimed ends it, and when claimed, the write is the
// first to set an entry of its value, which no other write was setting,
// with the ticket of the range taken after the write's own drop of it.
type Claim struct {
	group   *rangeGroup
	claimed bool
	lo      []byte
	ticket  Ticket
}

// InvalidateSet is Invalidate for a write that sets key. Its Claim must
// go to WrittenClaimed.
//
// Why a claim holds: every writer counts itself under way in the group,
// drops the range, takes the range's ticket, and only then looks the
// value up in the filter and adds it. A claim needs the value new to a
// complete filter and, after that, no other writer counted under way in
// the group. Another writer of the value is then either one that added
// it first (no claim), or one still under way (no claim), or one that
// ended after adding it later than the lookup, or began after the count:
// both drop the range after the ticket, and the install is refused.
func (c *Cache) InvalidateSet(key []byte) (held bool, cl Claim) {
	p := c.policy.Load()
	g := c.rangeGroupOf(p, key)
	f := g.filterFor(key) // before decoding key: most groups have none
	if f == nil {
		return c.invalidate(p, key, g), Claim{}
	}
	lo, ok := c.rangeOf(p, key)
	if !ok {
		return c.invalidate(p, key, g), Claim{}
	}
	g.setting.Add(1)
	held = c.invalidate(p, key, g)
	cl = Claim{group: g}
	t := c.rangeTicket(lo)
	if !f.add(c.valueHash(lo)) {
		return held, cl
	}
	if f.room.Add(-1) < 0 {
		c.dropFilter(g, f) // past its capacity: false positives grow
		return held, cl
	}
	// Alone is judged last: a writer counted before this load is under
	// way (no claim) or has ended, its drop after the ticket if its value
	// came after the lookup; one counted after it drops after the ticket.
	if f.complete.Load() && g.setting.Load() == 1 {
		cl.claimed, cl.lo, cl.ticket = true, lo, t
	}
	return held, cl
}

// filterFor is the filter of the bucket g (nil: none) when it is the
// filter of key's group.
func (g *rangeGroup) filterFor(key []byte) *valueFilter {
	if g == nil {
		return nil
	}
	if f := g.filter.Load(); f != nil && bytes.HasPrefix(key, f.prefix) {
		return f
	}
	return nil
}

// rangeOf is the lower bound of the equality range key belongs to.
func (c *Cache) rangeOf(p *Policy, key []byte) ([]byte, bool) {
	n, ok := p.EqualityLen(key)
	if !ok || n > len(key) {
		return nil, false
	}
	return key[:n], true
}

// rangeTicket is the ticket a read of the range at lo would take now.
func (c *Cache) rangeTicket(lo []byte) Ticket {
	sh := c.shardOf(c.hashOf(plainKey(lo)))
	sh.mu.Lock()
	t := Ticket{sh: sh, seq: sh.seq}
	sh.mu.Unlock()
	t.epoch = c.groups[c.groupOf(lo)].epoch.Load()
	return t
}

// WrittenClaimed is Written for a write InvalidateSet began: a claimed
// write that applied keeps its range as holding key alone, while the
// range's shard has spare room and no write reached it since the claim;
// any other ends as Written ends it.
func (c *Cache) WrittenClaimed(key, value []byte, keep Keep, cl Claim) bool {
	if cl.group == nil {
		return c.Written(key, value, keep)
	}
	defer cl.group.setting.Add(-1)
	if !cl.claimed || keep == KeepNone {
		return c.Written(key, value, keep)
	}
	return c.written(key, value, keep, func(p *Policy) {
		cl.group.writes.Add(1) // as dropRangeOf counts a write's end
		entries := []KV{{Key: key, Value: value}}
		at, ok := c.rangeSlotOf(cl.lo, entries)
		if !ok || !c.putAs(cl.ticket, at.entry(cl.lo, entries), true, true) {
			c.drop(true, plainKey(cl.lo))
			return
		}
		c.claimed.Add(1)
	})
}

// Counted reports whether the write was counted under way in its group:
// its claim must then reach WrittenClaimed.
func (cl Claim) Counted() bool { return cl.group != nil }

// Abandon ends a counted write that never reached WrittenClaimed (its
// batch could not be read back to settle it).
func (cl Claim) Abandon() {
	if cl.group != nil {
		cl.group.setting.Add(-1)
	}
}
