package rescache

import (
	"bytes"
	"sync"
)

// shard is one lock's share of the cache: two indexes (values by key,
// ranges by lower bound) into one table of slots, one recency list over
// both, and a heap of expiries.
//
// The table holds no pointer but each slot's data, and the indexes none
// at all: a full cache is one large array and one byte slice per entry
// to the collector, which would otherwise scan every entry's struct, key
// string, map slot and list links on each cycle (docs/design/0002,
// "What the cache costs the collector").
type shard struct {
	mu  sync.Mutex
	seq uint64 // bumped by every write that reaches the shard
	// writing counts the writes of its values between Invalidate and
	// Written: a read meanwhile may read the old value, so no fill is
	// kept while any is under way.
	writing int
	points  map[uint64]int32 // key's hash -> first slot with it
	ranges  map[uint64]int32
	chunks  [][]slot // the slots, slotChunk to a chunk; slot 0 is the recency list's sentinel
	free    []int32  // unused slots
	expiry  expiryHeap
	bytes   int64
	max     int64
}

// slot is a cached value or range. Its data is its key (a range's lower
// bound: the range is every key starting with it), then the value or the
// range's entries (appendEntry);
// nothing else in it points into the heap.
type slot struct {
	data       []byte
	expiry     int64 // Unix ns; 0 never
	hash       uint64
	size       int32
	keyLen     int32
	chain      int32 // the next slot whose key has the same hash
	prev, next int32 // the recency list
	heapIdx    int32
	entries    uint8 // a range's
	group      uint8 // a range's group bucket
	isRange    bool
	family     bool // a family's newest member: its own key framed before the value
	used       bool
}

// slotChunk is how many slots a chunk of the table holds: the table grows
// by a chunk, never copying or over-allocating a large array.
const slotChunk = 512

// at is slot i.
func (sh *shard) at(i int32) *slot { return &sh.chunks[i/slotChunk][i%slotChunk] }

// slotCount is how many slots the table has made.
func (sh *shard) slotCount() int32 {
	last := sh.chunks[len(sh.chunks)-1]
	return int32((len(sh.chunks)-1)*slotChunk + len(last))
}

const noSlot = 0 // slots[0] is the sentinel, never an entry

func (s *slot) key() []byte { return s.data[:s.keyLen] }

func (s *slot) payload() []byte { return s.data[s.keyLen:] }

// memberKey is the key of the value a family's slot holds; for any other
// slot, its own key.
func (s *slot) memberKey() []byte {
	if !s.family {
		return s.key()
	}
	k, _ := cutFramed(s.payload())
	return k
}

// valueOf is the value held for key, and whether the slot holds key's:
// a family's slot holds one member's.
func (s *slot) valueOf(key []byte) ([]byte, bool) {
	if !s.family {
		return s.payload(), true
	}
	k, v := cutFramed(s.payload())
	return v, bytes.Equal(k, key)
}

func (sh *shard) init(max int64) {
	sh.points = map[uint64]int32{}
	sh.ranges = map[uint64]int32{}
	sh.chunks = [][]slot{append(make([]slot, 0, slotChunk), slot{})}
	sh.free = nil
	sh.expiry = expiryHeap{sh: sh}
	sh.max = max
}

func (sh *shard) index(isRange bool) map[uint64]int32 {
	if isRange {
		return sh.ranges
	}
	return sh.points
}

// find returns the slot holding key among values or ranges, or noSlot.
func (sh *shard) find(isRange bool, hash uint64, key []byte) int32 {
	i := sh.index(isRange)[hash]
	for i != noSlot && !bytes.Equal(sh.at(i).key(), key) {
		i = sh.at(i).chain
	}
	return i
}

// room reports whether n more bytes fit the shard without evicting.
func (sh *shard) room(n int64) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.bytes+n <= sh.max
}

// meets reports whether the slot's key or range meets [start, end).
func (s *slot) meets(start, end []byte) bool {
	lo := s.memberKey()
	if end != nil && bytes.Compare(lo, end) >= 0 {
		return false
	}
	if !s.isRange {
		return bytes.Compare(lo, start) >= 0
	}
	// A range holds every key starting with lo: it ends past start when
	// start sorts before lo or starts with it.
	return bytes.Compare(start, lo) < 0 || bytes.HasPrefix(start, lo)
}

// sweepBudget bounds the expired entries one read or write evicts, so no
// request pays for a whole expiry burst; Sweep has no bound.
const sweepBudget = 32

// lookup returns the live slot at key and marks it used, evicting it
// instead when its value has expired. sh.mu is held.
func (c *Cache) lookup(sh *shard, isRange bool, hash uint64, key []byte) (*slot, bool) {
	now := c.now()
	c.sweepLocked(sh, now, sweepBudget)
	i := sh.find(isRange, hash, key)
	if i == noSlot {
		return nil, false
	}
	s := sh.at(i)
	if s.expiry != 0 && s.expiry <= now {
		c.removeLocked(sh, i)
		c.expired.Add(1)
		return nil, false
	}
	sh.unlink(i)
	sh.pushFront(i)
	return s, true
}

// sweepLocked evicts up to budget expired entries (budget < 0: all).
func (c *Cache) sweepLocked(sh *shard, now int64, budget int) {
	for ; budget != 0 && len(sh.expiry.at) > 0 && sh.at(sh.expiry.at[0]).expiry <= now; budget-- {
		c.removeLocked(sh, sh.expiry.at[0])
		c.expired.Add(1)
	}
}

// insertLocked adds e, replacing the entry under its key, and evicts the
// least recently used until the shard fits.
func (c *Cache) insertLocked(sh *shard, e slot) {
	idx := sh.index(e.isRange)
	if old := sh.find(e.isRange, e.hash, e.key()); old != noSlot {
		c.removeLocked(sh, old)
	}
	i := sh.alloc()
	e.used, e.heapIdx = true, -1
	e.chain = idx[e.hash]
	*sh.at(i) = e
	idx[e.hash] = i
	sh.pushFront(i)
	if e.expiry != 0 {
		sh.expiry.push(i)
	}
	if e.isRange {
		c.groups[e.group].held.Add(1)
	}
	sh.bytes += int64(e.size)
	c.bytes.Add(int64(e.size))
	c.items.Add(1)
	for sh.bytes > sh.max && sh.at(0).prev != noSlot {
		c.removeLocked(sh, sh.at(0).prev)
		c.evictions.Add(1)
	}
}

// alloc returns an unused slot, growing the table when none is free.
func (sh *shard) alloc() int32 {
	if n := len(sh.free); n > 0 {
		i := sh.free[n-1]
		sh.free = sh.free[:n-1]
		return i
	}
	last := len(sh.chunks) - 1
	if len(sh.chunks[last]) == slotChunk {
		sh.chunks = append(sh.chunks, make([]slot, 0, slotChunk))
		last++
	}
	sh.chunks[last] = append(sh.chunks[last], slot{})
	return sh.slotCount() - 1
}

func (c *Cache) removeLocked(sh *shard, i int32) {
	s := sh.at(i)
	sh.unchain(i)
	if s.isRange {
		c.groups[s.group].held.Add(-1)
	}
	sh.unlink(i)
	if s.heapIdx >= 0 {
		sh.expiry.remove(int(s.heapIdx))
	}
	sh.bytes -= int64(s.size)
	c.bytes.Add(-int64(s.size))
	c.items.Add(-1)
	*s = slot{}
	sh.free = append(sh.free, i)
}

// unchain takes slot i out of its index's chain for its hash.
func (sh *shard) unchain(i int32) {
	s := sh.at(i)
	idx := sh.index(s.isRange)
	head := idx[s.hash]
	if head == i {
		if s.chain == noSlot {
			delete(idx, s.hash)
		} else {
			idx[s.hash] = s.chain
		}
		return
	}
	for p := head; p != noSlot; p = sh.at(p).chain {
		if sh.at(p).chain == i {
			sh.at(p).chain = s.chain
			return
		}
	}
}

func (sh *shard) pushFront(i int32) {
	first := sh.at(0).next
	s := sh.at(i)
	s.prev, s.next = noSlot, first
	sh.at(first).prev = i
	sh.at(0).next = i
}

func (sh *shard) unlink(i int32) {
	s := sh.at(i)
	sh.at(s.prev).next = s.next
	sh.at(s.next).prev = s.prev
	s.prev, s.next = noSlot, noSlot
}

// expiryHeap orders a shard's slots by expiry, earliest first (a binary
// heap of slot numbers, each slot knowing its place in it).
type expiryHeap struct {
	sh *shard
	at []int32
}

func (h *expiryHeap) less(a, b int) bool {
	return h.sh.at(h.at[a]).expiry < h.sh.at(h.at[b]).expiry
}

func (h *expiryHeap) swap(a, b int) {
	h.at[a], h.at[b] = h.at[b], h.at[a]
	h.sh.at(h.at[a]).heapIdx, h.sh.at(h.at[b]).heapIdx = int32(a), int32(b)
}

func (h *expiryHeap) push(i int32) {
	h.sh.at(i).heapIdx = int32(len(h.at))
	h.at = append(h.at, i)
	h.up(len(h.at) - 1)
}

// remove takes out the slot at place pos.
func (h *expiryHeap) remove(pos int) {
	last := len(h.at) - 1
	if pos != last {
		h.swap(pos, last)
	}
	h.sh.at(h.at[last]).heapIdx = -1
	h.at = h.at[:last]
	if pos != last {
		h.down(pos)
		h.up(pos)
	}
}

func (h *expiryHeap) up(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !h.less(j, parent) {
			return
		}
		h.swap(j, parent)
		j = parent
	}
}

func (h *expiryHeap) down(j int) {
	for {
		least := j
		for _, child := range [2]int{2*j + 1, 2*j + 2} {
			if child < len(h.at) && h.less(child, least) {
				least = child
			}
		}
		if least == j {
			return
		}
		h.swap(j, least)
		j = least
	}
}
