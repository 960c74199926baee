package rescache

import "bytes"

// Cacheable reports whether [lo, hi) is an equality range the cache may
// hold: every key starting with lo, lo being a whole equality prefix by
// the policy.
func (c *Cache) Cacheable(lo, hi []byte) bool {
	p := c.policy.Load()
	if c.maxBytes == 0 || p.EqualityLen == nil || !isPrefixEnd(lo, hi) {
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
	t, ok := c.find(lo, true, func(s *slot) bool {
		it = decodeEntries(s.payload(), int(s.entries))
		return true
	})
	return it, t, ok
}

// MaxRangeEntries is the most entries FillRange keeps.
func (c *Cache) MaxRangeEntries() int { return maxRangeEntries }

// rangeEntryOverhead approximates an entry's share of a range's memory
// beyond its key and value: the two lengths that frame it.
const rangeEntryOverhead = 8

// FillRange keeps the entries read from [lo, hi) under t, unless a write
// reached the range's shard since. The cache copies them.
func (c *Cache) FillRange(lo, hi []byte, entries []KV, t Ticket) {
	if len(entries) > maxRangeEntries || !c.Cacheable(lo, hi) {
		return
	}
	n := len(lo)
	for _, kv := range entries {
		n += len(kv.Key) + len(kv.Value) + rangeEntryOverhead
	}
	data := make([]byte, 0, n)
	data = append(data, lo...)
	for _, kv := range entries {
		data = appendEntry(data, kv)
	}
	c.put(t, slot{data: data, keyLen: int32(len(lo)), entries: uint8(len(entries)),
		isRange: true, size: int32(n) + itemOverhead})
}
