package rescache

import (
	"bytes"
	"container/heap"
	"sync"
)

// shard is one lock's share of the cache: two maps (values by key, ranges
// by lower bound), one recency list over both, and a heap of expiries.
type shard struct {
	mu  sync.Mutex
	seq uint64 // bumped by every write that reaches the shard
	// writing counts the writes of its values between Invalidate and
	// Written: a read meanwhile may read the old value, so no fill is
	// kept while any is under way.
	writing int
	points  map[string]*item
	ranges  map[string]*item
	lru     item // sentinel: lru.next is the most recently used
	bytes   int64
	max     int64
	expiry  expiryHeap
}

// item is a cached value or range.
type item struct {
	key        string
	hi         []byte // a range's upper bound
	value      []byte // a value
	entries    []KV   // a range's entries
	isRange    bool
	group      *rangeGroup // a range's, counted in while it is held
	size       int64
	expiry     int64 // Unix ns; 0 never
	heapIdx    int
	prev, next *item
}

func (sh *shard) init(max int64) {
	sh.points = map[string]*item{}
	sh.ranges = map[string]*item{}
	sh.lru.prev, sh.lru.next = &sh.lru, &sh.lru
	sh.max = max
}

// room reports whether n more bytes fit the shard without evicting.
func (sh *shard) room(n int64) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.bytes+n <= sh.max
}

// meets reports whether the item's key or range meets [start, end).
func (it *item) meets(start, end []byte) bool {
	lo := []byte(it.key)
	if end != nil && bytes.Compare(lo, end) >= 0 {
		return false
	}
	if !it.isRange {
		return bytes.Compare(lo, start) >= 0
	}
	return it.hi == nil || bytes.Compare(it.hi, start) > 0
}

// sweepBudget bounds the expired entries one read or write evicts, so no
// request pays for a whole expiry burst; Sweep has no bound.
const sweepBudget = 32

// lookup returns the live item at key in m and marks it used, evicting it
// instead when its value has expired. sh.mu is held.
func (c *Cache) lookup(sh *shard, m map[string]*item, key []byte) *item {
	now := c.now()
	c.sweepLocked(sh, now, sweepBudget)
	it, ok := m[string(key)]
	if !ok {
		return nil
	}
	if it.expiry != 0 && it.expiry <= now {
		c.removeLocked(sh, it)
		c.expired.Add(1)
		return nil
	}
	sh.unlink(it)
	sh.pushFront(it)
	return it
}

// sweepLocked evicts up to budget expired entries (budget < 0: all).
func (c *Cache) sweepLocked(sh *shard, now int64, budget int) {
	for ; budget != 0 && len(sh.expiry) > 0 && sh.expiry[0].expiry <= now; budget-- {
		c.removeLocked(sh, sh.expiry[0])
		c.expired.Add(1)
	}
}

// insertLocked adds it, replacing an item under its key, and evicts the
// least recently used until the shard fits.
func (c *Cache) insertLocked(sh *shard, it *item) {
	m := sh.points
	if it.isRange {
		m = sh.ranges
	}
	if old, ok := m[it.key]; ok {
		c.removeLocked(sh, old)
	}
	m[it.key] = it
	sh.pushFront(it)
	it.heapIdx = -1
	if it.expiry != 0 {
		heap.Push(&sh.expiry, it)
	}
	if it.isRange {
		it.group = c.groupOfKey(it.key)
		it.group.held.Add(1)
	}
	sh.bytes += it.size
	c.bytes.Add(it.size)
	c.items.Add(1)
	for sh.bytes > sh.max && sh.lru.prev != &sh.lru {
		c.removeLocked(sh, sh.lru.prev)
		c.evictions.Add(1)
	}
}

func (c *Cache) removeLocked(sh *shard, it *item) {
	if it.isRange {
		delete(sh.ranges, it.key)
		it.group.held.Add(-1)
	} else {
		delete(sh.points, it.key)
	}
	sh.unlink(it)
	if it.heapIdx >= 0 {
		heap.Remove(&sh.expiry, it.heapIdx)
	}
	sh.bytes -= it.size
	c.bytes.Add(-it.size)
	c.items.Add(-1)
}

func (sh *shard) pushFront(it *item) {
	it.prev, it.next = &sh.lru, sh.lru.next
	sh.lru.next.prev = it
	sh.lru.next = it
}

func (sh *shard) unlink(it *item) {
	it.prev.next = it.next
	it.next.prev = it.prev
	it.prev, it.next = nil, nil
}

// expiryHeap orders items by expiry, earliest first.
type expiryHeap []*item

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiry < h[j].expiry }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}

func (h *expiryHeap) Push(x any) {
	it := x.(*item)
	it.heapIdx = len(*h)
	*h = append(*h, it)
}

func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.heapIdx = -1
	return it
}
