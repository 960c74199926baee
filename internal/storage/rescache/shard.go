package rescache

import (
	"bytes"
	"encoding/binary"
	"sync"
)

// shard is one lock's share of the cache: two indexes (values by key,
// ranges by lower bound) into one table of slots, a clock hand over the
// table, and a heap of expiries.
//
// Neither the table nor the indexes hold a pointer, and the entries' data
// lies in the arena's pages: a full cache is a few large arrays to the
// collector, which would otherwise scan every entry's struct, key string,
// map slot and list links, and mark each entry's bytes, on each cycle
// (docs/design/0002, "What the cache costs the collector").
type shard struct {
	mu  sync.Mutex
	seq uint64 // bumped by every write that reaches the shard
	// writing counts the writes of its values between Invalidate and
	// Written: a read meanwhile may read the old value, so no fill is
	// kept while any is under way.
	writing int
	points  slotIndex // values' slots by their keys' hashes
	ranges  slotIndex
	chunks  [][]slot // the slots, slotChunk to a chunk; slot 0 is never an entry
	hand    int32    // the slot the clock hand looked at last (victim)
	free    []int32  // unused slots
	expiry  expiryHeap
	arena   arena
	scratch []byte // where Written frames an entry before the arena takes it
	bytes   int64
	max     int64
	heads   heads // first bytes of the keys held since it was empty
	pending int   // its pending values
}

// hasRoom reports whether an entry of size bytes fits beside what the
// shard holds, evicting nothing.
func (sh *shard) hasRoom(size int) bool { return sh.bytes+int64(size) <= sh.max }

// slot is a cached value or range. Its data, in the shard's arena, is its
// key (a range's lower bound: the range is every key starting with it),
// then the value or the range's entries (appendEntry).
type slot struct {
	loc    place // of the data in the arena
	expiry int64 // Unix ns; 0 never
	hash   uint64
	// heapBound is the expiry of the slot's place in the heap (heapIdx),
	// kept here so that a write moving the expiry later compares with it
	// without reading the heap: one memory miss fewer per touch.
	heapBound int64
	dataLen   int32
	size      int32
	keyLen    int32
	heapIdx   int32
	entries   uint8 // a range's
	group     uint8 // a range's group bucket
	isRange   bool
	family    bool // a family's newest member: its own part framed before the value
	used      bool
	// used since the clock hand last passed: a read or a write sets it,
	// the hand clears it, and evicts a slot it finds clear.
	referenced bool
	// stale marks a value a write is replacing (dropWriting): no read
	// finds it, and Written puts the new value in its place, or removes
	// it, instead of unindexing it and indexing it again.
	stale bool
	// pending marks a value storage does not hold yet (pending.go): never
	// evicted, served even once expired, until a write of the key or the
	// write-behind's flush settles it. pendLo and pendHi bound the bytes
	// in which it differs from the value storage holds; patched, that
	// the engine logged it as a patch of its own (else the layer above's
	// records are its log).
	pending, patched bool
	pendLo, pendHi   int32
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

// entry is a slot with its data: one to insert, whose data has no place
// yet, or one held, read under the shard's lock (held).
type entry struct {
	slot
	data []byte
}

// held is slot i with its data in the arena, valid while sh.mu is held.
func (sh *shard) held(i int32) entry {
	s := sh.at(i)
	return entry{slot: *s, data: sh.arena.bytes(s.loc, s.dataLen)}
}

func (e *entry) key() []byte { return e.data[:e.keyLen] }

// slotKey is the key a value is held under, head and tail joined: a
// family's key is its member's with the member's own part cut from the
// middle, looked up and compared in its two pieces without a copy.
type slotKey struct{ head, tail []byte }

func plainKey(key []byte) slotKey { return slotKey{head: key} }

func (k slotKey) size() int { return len(k.head) + len(k.tail) }

func (k slotKey) equal(b []byte) bool {
	return len(b) == k.size() && bytes.Equal(b[:len(k.head)], k.head) && bytes.Equal(b[len(k.head):], k.tail)
}

func (k slotKey) appendTo(dst []byte) []byte { return append(append(dst, k.head...), k.tail...) }

func (e *entry) payload() []byte { return e.data[e.keyLen:] }

// memberParts is the key of the value the slot holds, in three pieces
// joined in order: a family's slot frames only its member's own part
// (the middle cut from the slot's key, and where it was cut), so the key
// is not held twice; any other slot's key is its first piece.
func (e *entry) memberParts() (parts [3][]byte, value []byte) {
	if !e.family {
		return [3][]byte{e.key()}, e.payload()
	}
	rest := e.payload()
	cut, w := binary.Uvarint(rest)
	mid, value := cutFramed(rest[w:])
	k := e.key()
	return [3][]byte{k[:cut], mid, k[cut:]}, value
}

// appendMemberKey appends the key of the value the slot holds to dst.
func (e *entry) appendMemberKey(dst []byte) []byte {
	p, _ := e.memberParts()
	return append(append(append(dst, p[0]...), p[1]...), p[2]...)
}

// valueOf is the value held for key, and whether the slot holds key's:
// a family's slot holds one member's.
func (e *entry) valueOf(key []byte) ([]byte, bool) {
	if !e.family {
		return e.payload(), true
	}
	p, v := e.memberParts()
	return v, comparePieces(p, key) == 0
}

// comparePieces compares the key joined from p with b, as bytes.Compare.
func comparePieces(p [3][]byte, b []byte) int {
	for _, piece := range p {
		n := min(len(piece), len(b))
		if c := bytes.Compare(piece[:n], b[:n]); c != 0 {
			return c
		}
		if n < len(piece) {
			return 1 // b is a proper prefix of the key
		}
		b = b[n:]
	}
	if len(b) > 0 {
		return -1
	}
	return 0
}

// memberHead is the first bytes of the key of the value the slot holds
// (none for an empty key): what heads look at.
func (e *entry) memberHead() []byte {
	p, _ := e.memberParts()
	for _, piece := range p {
		if len(piece) > 0 {
			return piece
		}
	}
	return nil
}

func (sh *shard) init(max int64) {
	sh.points = slotIndex{}
	sh.ranges = slotIndex{}
	sh.chunks = [][]slot{append(make([]slot, 0, slotChunk), slot{})}
	sh.free = nil
	sh.expiry = expiryHeap{sh: sh}
	sh.arena.init(max)
	sh.max = max
}

func (sh *shard) index(isRange bool) *slotIndex {
	if isRange {
		return &sh.ranges
	}
	return &sh.points
}

// find returns the slot holding key among values or ranges, or noSlot.
// The slot's fields are read before the key's bytes are compared, and
// neither read waits for the other (slotIndex's cell).
func (sh *shard) find(isRange bool, hash uint64, key slotKey) int32 {
	return sh.index(isRange).probe(hash, func(i int32, loc place) bool {
		s := sh.at(i)
		slotHash, keyLen := s.hash, int(s.keyLen)
		b, ok := sh.arena.prefix(loc, key.size())
		return ok && key.equal(b) && slotHash == hash && keyLen == key.size()
	})
}

// meets reports whether the entry's key or range meets [start, end): a
// range holds every key starting with its own (prefixMeets).
func (e *entry) meets(start, end []byte) bool {
	if e.isRange {
		return prefixMeets(e.key(), start, end)
	}
	p, _ := e.memberParts()
	return (end == nil || comparePieces(p, end) < 0) && comparePieces(p, start) >= 0
}

// sweepBudget bounds the expired entries one read or write evicts, so no
// request pays for a whole expiry burst; Sweep has no bound.
const sweepBudget = 32

// lookup returns the live entry at key and marks it used, evicting it
// instead when its value has expired. sh.mu is held.
func (c *Cache) lookup(sh *shard, isRange bool, hash uint64, key slotKey) (entry, bool) {
	now := c.Now()
	c.sweepLocked(sh, now, sweepBudget)
	i := sh.find(isRange, hash, key)
	if i == noSlot || sh.at(i).stale {
		return entry{}, false
	}
	s := sh.at(i)
	if s.expiry != 0 && s.expiry <= now && !s.pending {
		c.removeLocked(sh, i)
		c.expired.Add(1)
		return entry{}, false
	}
	s.referenced = true
	return sh.held(i), true
}

// sweepLocked evicts up to budget expired entries (budget < 0: all). A
// first place whose slot's expiry moved later (setExpiry) is moved down
// to it instead, which counts against the budget too.
func (c *Cache) sweepLocked(sh *shard, now int64, budget int) {
	for ; budget != 0 && len(sh.expiry.at) > 0 && sh.expiry.first().expiry <= now; budget-- {
		first := sh.expiry.first()
		if at := sh.at(first.slot).expiry; at > first.expiry {
			sh.expiry.move(0, at)
			continue
		}
		if sh.at(first.slot).pending {
			sh.expiry.remove(0) // back in the heap once settled (settleSlot)
			continue
		}
		c.removeLocked(sh, first.slot)
		c.expired.Add(1)
	}
}

// insertLocked adds e, its data copied into the arena, replacing the
// entry under its key in place, and evicts (victim) until the shard fits.
func (c *Cache) insertLocked(sh *shard, e entry) {
	c.insertAt(sh, sh.find(e.isRange, e.hash, plainKey(e.key())), e)
}

// insertAt is insertLocked for a caller that has found the slot under
// e's key already: i, or noSlot.
func (c *Cache) insertAt(sh *shard, i int32, e entry) {
	if i != noSlot {
		c.replaceLocked(sh, i, e)
	} else {
		c.addLocked(sh, e)
	}
	for sh.bytes > sh.max {
		v := sh.victim()
		if v == noSlot {
			return // every entry pending: the flush makes room (pending.go)
		}
		c.removeLocked(sh, v)
		c.evictions.Add(1)
	}
}

// addLocked puts e in a new slot. sh.mu is held.
func (c *Cache) addLocked(sh *shard, e entry) {
	i := sh.alloc()
	// A new entry starts unmarked: read once and never again (a bulk
	// load, a scan), it is the first the hand takes; a read marks it.
	e.used, e.referenced, e.heapIdx = true, false, -1
	sh.heads.add(e.memberHead())
	e.loc, e.dataLen = sh.arena.alloc(len(e.data)), int32(len(e.data))
	copy(sh.arena.bytes(e.loc, e.dataLen), e.data)
	*sh.at(i) = e.slot
	sh.index(e.isRange).add(e.hash, i, e.loc)
	if e.expiry != 0 {
		sh.expiry.push(i)
	}
	if e.isRange {
		c.groups[e.group].held.Add(1)
	}
	sh.bytes += int64(e.size)
	c.bytes.Add(int64(e.size))
	c.items.Add(1)
}

// replaceLocked puts e in slot i, which holds the same key: its index
// entry and its range group stay, its data keeps its place when the new
// data is of the same size class, and its expiry moves within the heap.
// A touch rewrites its document's slot this way on every commit.
// sh.mu is held.
func (c *Cache) replaceLocked(sh *shard, i int32, e entry) {
	s := sh.at(i)
	if s.pending {
		c.pendingDone(sh, s) // storage holds the new value
	}
	if e.family {
		sh.heads.add(e.memberHead()) // another member of the family
	}
	n := int32(len(e.data))
	if !sh.arena.holds(s.loc, int(s.dataLen), int(n)) {
		sh.arena.release(s.loc, int(s.dataLen))
		s.loc = sh.arena.alloc(int(n))
		sh.index(s.isRange).moved(s.hash, i, s.loc)
	}
	s.dataLen = n
	copy(sh.arena.bytes(s.loc, n), e.data)
	sh.bytes += int64(e.size - s.size)
	c.bytes.Add(int64(e.size - s.size))
	s.size, s.keyLen, s.entries, s.family, s.stale = e.size, e.keyLen, e.entries, e.family, false
	s.referenced = true
	sh.setExpiry(i, e.expiry)
}

// setExpiry gives slot i a new expiry (0: never), moving it within the
// heap, placing it there or taking it out. A later expiry leaves the
// slot's place as it is: a touch moves its document's expiry later on
// every commit, and sifting it down to a leaf each time wrote a slot per
// level of the heap. The place's expiry is then a bound below the slot's,
// and sweepLocked moves the slot down when the bound comes.
func (sh *shard) setExpiry(i int32, expiry int64) {
	s := sh.at(i)
	inHeap := s.heapIdx >= 0
	s.expiry = expiry
	switch {
	case inHeap && expiry != 0 && expiry >= s.heapBound:
	case inHeap && expiry != 0:
		sh.expiry.move(int(s.heapIdx), expiry)
	case inHeap:
		sh.expiry.remove(int(s.heapIdx))
	case expiry != 0:
		sh.expiry.push(i)
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
	sh.index(s.isRange).remove(s.hash, i)
	if s.isRange {
		c.groups[s.group].held.Add(-1)
	}
	if s.heapIdx >= 0 {
		sh.expiry.remove(int(s.heapIdx))
	}
	if s.pending {
		c.pendingDone(sh, s)
	}
	sh.bytes -= int64(s.size)
	c.bytes.Add(-int64(s.size))
	c.items.Add(-1)
	sh.arena.release(s.loc, int(s.dataLen))
	*s = slot{}
	sh.free = append(sh.free, i)
	if sh.bytes == 0 { // empty: its pages and index cells go back to the heap
		sh.arena.init(sh.max)
		sh.points, sh.ranges = slotIndex{}, slotIndex{}
		sh.heads = heads{}
	}
}

// victim is the slot to evict: the first the clock hand finds unused
// since it last passed, clearing the mark of those used meanwhile (the
// CLOCK approximation of least recently used). A hit then only sets its
// own slot's mark, where a recency list moved it, reading and writing its
// two neighbours' slots: two cache misses more per lookup. A pending
// value is never the victim; noSlot when every entry is pending.
func (sh *shard) victim() int32 {
	n := sh.slotCount()
	// Two turns clear every mark; a third finds no victim only when
	// every entry is pending.
	for range 3 * n {
		sh.hand++
		if sh.hand >= n {
			sh.hand = 1
		}
		s := sh.at(sh.hand)
		switch {
		case !s.used, s.pending:
		case s.referenced:
			s.referenced = false
		default:
			return sh.hand
		}
	}
	return noSlot
}

// expiryHeap orders a shard's slots by expiry, earliest first: a 4-ary
// heap whose places hold each slot's expiry beside its number, so that
// sifting compares without reading the slots (a touch moves its
// document's place from deep in a heap of 100,000, and each level read
// from the table was a cache miss). Each slot knows its place.
type expiryHeap struct {
	sh *shard
	at []heapPlace
}

type heapPlace struct {
	expiry int64
	slot   int32
}

// heapArity is the children per place: half the depth of a binary heap,
// the four children of a place side by side in memory.
const heapArity = 4

// first is the slot that expires first; the heap is not empty.
func (h *expiryHeap) first() heapPlace { return h.at[0] }

func (h *expiryHeap) set(pos int, p heapPlace) {
	h.at[pos] = p
	s := h.sh.at(p.slot)
	s.heapIdx, s.heapBound = int32(pos), p.expiry
}

func (h *expiryHeap) push(i int32) {
	h.at = append(h.at, heapPlace{})
	h.up(len(h.at)-1, heapPlace{expiry: h.sh.at(i).expiry, slot: i})
}

// remove takes out the slot at place pos.
func (h *expiryHeap) remove(pos int) {
	last := len(h.at) - 1
	h.sh.at(h.at[pos].slot).heapIdx = -1
	moved := h.at[last]
	h.at = h.at[:last]
	if pos != last {
		h.sift(pos, moved)
	}
}

// move gives the slot at place pos a new expiry.
func (h *expiryHeap) move(pos int, expiry int64) {
	h.sift(pos, heapPlace{expiry: expiry, slot: h.at[pos].slot})
}

// sift puts p at pos, or above or below it where its expiry belongs.
func (h *expiryHeap) sift(pos int, p heapPlace) {
	if pos > 0 && p.expiry < h.at[(pos-1)/heapArity].expiry {
		h.up(pos, p)
	} else {
		h.down(pos, p)
	}
}

// up puts p at pos or above it, moving later parents down.
func (h *expiryHeap) up(pos int, p heapPlace) {
	for pos > 0 {
		parent := (pos - 1) / heapArity
		if h.at[parent].expiry <= p.expiry {
			break
		}
		h.set(pos, h.at[parent])
		pos = parent
	}
	h.set(pos, p)
}

// down puts p at pos or below it, moving earlier children up.
func (h *expiryHeap) down(pos int, p heapPlace) {
	for {
		first := heapArity*pos + 1
		if first >= len(h.at) {
			break
		}
		least := first
		for c := first + 1; c < min(first+heapArity, len(h.at)); c++ {
			if h.at[c].expiry < h.at[least].expiry {
				least = c
			}
		}
		if h.at[least].expiry >= p.expiry {
			break
		}
		h.set(pos, h.at[least])
		pos = least
	}
	h.set(pos, p)
}
