package rescache

import "bytes"

// Cacheable reports whether [lo, hi) is an equality range the cache may
// hold: every key starting with lo, lo being a whole equality prefix by
// the policy.
func (c *Cache) Cacheable(lo, hi []byte) bool { return isPrefixEnd(lo, hi) && c.isEquality(lo) }

// isEquality reports whether lo is a whole equality prefix by the policy,
// in a cache that keeps anything.
func (c *Cache) isEquality(lo []byte) bool {
	p := c.policy.Load()
	if c.maxBytes == 0 || p.EqualityLen == nil {
		return false
	}
	n, ok := p.EqualityLen(lo)
	return ok && n == len(lo)
}

// isPrefixEnd reports whether hi is the first key after every key
// starting with lo.
func isPrefixEnd(lo, hi []byte) bool {
	i := len(lo) - 1
	for i >= 0 && lo[i] == 0xff {
		i--
	}
	return i >= 0 && len(hi) == i+1 && bytes.Equal(hi[:i], lo[:i]) && hi[i] == lo[i]+1
}

// GetRange returns an iterator over the entries cached for the range
// starting at lo, or false and the ticket for a read of storage that
// FillRange may keep.
func (c *Cache) GetRange(lo []byte) (*SliceIter, Ticket, bool) {
	var it *SliceIter
	t, ok := c.find(plainKey(lo), true, func(e entry) bool {
		// A copy: once the lock is released, a write may reuse the place.
		it = expandRange(e.key(), e.payload(), int(e.entries))
		return true
	})
	if ok && it == nil {
		it = NewSliceIter(nil) // known empty (filter.go)
	}
	return it, t, ok
}

// MaxRangeEntries is the most entries FillRange keeps.
func (c *Cache) MaxRangeEntries() int { return maxRangeEntries }

// rangeEntryOverhead approximates an entry's share of a range's memory
// beyond its key's suffix and its value: the two lengths that frame them.
const rangeEntryOverhead = 4

// rangeHolds reports whether entries may be held as the range at lo: few
// enough, and every key starting with lo (which the range's data holds
// once, appendRangeEntry).
func rangeHolds(lo []byte, entries []KV) bool {
	if len(entries) > maxRangeEntries {
		return false
	}
	for _, kv := range entries {
		if !bytes.HasPrefix(kv.Key, lo) {
			return false
		}
	}
	return true
}

// FillRange keeps the entries read from [lo, hi) under t, unless a write
// reached the range's shard since. The cache copies them. An empty range
// takes only spare room: it is most often a unique index's check before
// an insert claims the value, which the insert then writes (InstallRange),
// and it must not push out what reads use.
func (c *Cache) FillRange(lo, hi []byte, entries []KV, t Ticket) {
	if !rangeHolds(lo, entries) || !c.Cacheable(lo, hi) {
		return
	}
	c.put(t, rangeEntry(lo, entries, rangeLen(lo, entries)), len(entries) == 0)
}

// InstallRange keeps entries as the whole range of the keys starting
// with lo, written by a commit that has just been applied, whose writer
// knows no other write changes the range until this call returns
// (storage.SoleEntryNoter). As
// KeepSpare does for a value, it keeps them only while the shard has room:
// a bulk load never pushes out what reads brought in. A read of storage
// that began before is refused its fill (the shard's sequence moves).
func (c *Cache) InstallRange(lo []byte, entries []KV) {
	at, ok := c.rangeSlotOf(lo, entries)
	if !ok {
		return
	}
	sh := at.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.seq++
	if !sh.hasRoom(at.n + itemOverhead) {
		return
	}
	if e := at.entry(lo, entries); c.fits(sh, e, true, 0) {
		c.insertLocked(sh, e)
	}
}

// rangeSlot is where a range to be kept goes: its data's length
// (rangeLen), its hash, its shard and its group's bucket.
type rangeSlot struct {
	n     int
	hash  uint64
	sh    *shard
	group uint8
}

// rangeSlotOf places entries as the range at lo; ok is false for a range
// the cache does not hold.
func (c *Cache) rangeSlotOf(lo []byte, entries []KV) (rangeSlot, bool) {
	if !rangeHolds(lo, entries) || !c.isEquality(lo) {
		return rangeSlot{}, false
	}
	hash := c.hashOf(plainKey(lo))
	return rangeSlot{n: rangeLen(lo, entries), hash: hash, sh: c.shardOf(hash), group: c.groupOf(lo)}, true
}

// entry is the range's entry to insert.
func (r rangeSlot) entry(lo []byte, entries []KV) entry {
	e := rangeEntry(lo, entries, r.n)
	e.hash, e.group = r.hash, r.group
	return e
}

// rangeLen is the length of a range's data: lo, then its entries.
func rangeLen(lo []byte, entries []KV) int {
	n := len(lo)
	for _, kv := range entries {
		n += len(kv.Key) - len(lo) + rangeEntryOverhead
		if !valueIsSuffix(lo, kv) {
			n += len(kv.Value)
		}
	}
	return n
}

// rangeEntry is the slot of the range at lo holding entries, n being
// rangeLen's.
func rangeEntry(lo []byte, entries []KV, n int) entry {
	data := make([]byte, 0, n)
	data = append(data, lo...)
	for _, kv := range entries {
		data = appendRangeEntry(data, lo, kv)
	}
	return entry{data: data, slot: slot{keyLen: int32(len(lo)), entries: uint8(len(entries)),
		isRange: true, size: int32(n) + itemOverhead}}
}
