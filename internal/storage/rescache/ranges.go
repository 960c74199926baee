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

// GetRange returns the entries cached for the range starting at lo (not
// copies), or false and the ticket for a read of storage that FillRange
// may keep.
func (c *Cache) GetRange(lo []byte) ([]KV, Ticket, bool) {
	it, t := c.find(lo, true)
	if it == nil {
		return nil, t, false
	}
	return it.entries, t, true
}

// MaxRangeEntries is the most entries FillRange keeps.
func (c *Cache) MaxRangeEntries() int { return maxRangeEntries }

// FillRange keeps the entries read from [lo, hi) under t, unless a write
// reached the range's shard since. The cache owns entries from then on:
// the caller passes copies and never changes them.
func (c *Cache) FillRange(lo, hi []byte, entries []KV, t Ticket) {
	if len(entries) > maxRangeEntries || !c.Cacheable(lo, hi) {
		return
	}
	c.put(t, true, bytes.Clone(lo), bytes.Clone(hi), &item{entries: entries})
}
