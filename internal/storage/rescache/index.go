package rescache

// slotIndex finds the slots of a shard's values (or ranges) by their keys'
// hashes: an open-addressing table of 16-byte cells, each a hash's upper
// half (its tag) beside a slot number and the place of the slot's data,
// probed linearly from the cell the tag names. A lookup's probe reads one
// cache line, most often; Go's map read a group's control word and then
// the group's slot, two lines, each a miss once a shard holds tens of
// thousands of entries. Holding no pointer, the table is one object the
// collector never scans.
//
// Beside the table, tagCounts counts the cells under each bucket of tags
// (four buckets a cell): a probe whose bucket counts none answers "not
// indexed" from it alone. Most writes of a bulk load, or of a replica
// set member applying one, are of keys the cache does not hold, and each
// asks twice (the write under way, then its end); at a quarter of the
// table's size the counts stay in the processor's caches where the table
// does not.
type slotIndex struct {
	cells     []cell
	tagCounts []uint8 // cells per tag bucket; saturated counts stay (grow recounts)
	count     int
}

// tagBucketsPerCell sizes tagCounts: with the table at most three
// quarters full, a bucket holds a tag of a probed key not indexed at
// most about 17 % of the time.
const tagBucketsPerCell = 4

// cell is one indexed slot. The place of its data beside the slot number
// lets a probe read the key from the arena and the slot from the table at
// once: with the place in the slot alone, the key's read waited for the
// slot's, two memory misses in a row on a shard too big for the caches.
type cell struct {
	word uint64 // tag<<32 | slot; 0 is empty (slot 0 is never indexed)
	loc  place  // the slot's data in the arena
}

// minCells is an index's first size; it doubles when three quarters full.
const minCells = 64

// wordOf is the word of slot's cell under hash: the hash's tag and the slot.
func wordOf(hash uint64, slot int32) uint64 { return hash&^(1<<32-1) | uint64(uint32(slot)) }

func (c cell) empty() bool { return c.word == 0 }

func wordSlot(w uint64) int32 { return int32(uint32(w)) }

func wordTag(w uint64) uint64 { return w >> 32 }

// home is the cell a probe for w's tag starts at.
func (x *slotIndex) home(w uint64) int { return int(wordTag(w)) & (len(x.cells) - 1) }

// next is the cell after p, wrapping around.
func (x *slotIndex) next(p int) int { return (p + 1) & (len(x.cells) - 1) }

// add indexes slot, whose data lies at loc, under hash.
func (x *slotIndex) add(hash uint64, slot int32, loc place) {
	if 4*(x.count+1) > 3*len(x.cells) {
		x.grow()
	}
	x.put(cell{word: wordOf(hash, slot), loc: loc})
	x.countTag(hash>>32, 1)
	x.count++
}

// tagBucket is where tag's cells are counted in tagCounts.
func (x *slotIndex) tagBucket(tag uint64) int { return int(tag) & (len(x.tagCounts) - 1) }

// countTag adds delta (1 or -1) to tag's bucket. A bucket that reached
// its type's limit keeps it until grow recounts: it may then count more
// cells than it holds, which costs a probe of the table, never fewer.
func (x *slotIndex) countTag(tag uint64, delta int) {
	b := &x.tagCounts[x.tagBucket(tag)]
	if *b != 255 {
		*b = uint8(int(*b) + delta)
	}
}

// put puts c in the first empty cell from its home.
func (x *slotIndex) put(c cell) {
	p := x.home(c.word)
	for !x.cells[p].empty() {
		p = x.next(p)
	}
	x.cells[p] = c
}

func (x *slotIndex) grow() {
	old := x.cells
	x.cells = make([]cell, max(2*len(old), minCells))
	x.tagCounts = make([]uint8, tagBucketsPerCell*len(x.cells))
	for _, c := range old {
		if !c.empty() {
			x.put(c)
			x.countTag(wordTag(c.word), 1)
		}
	}
}

// cellOfSlot is the index of the cell holding slot, indexed under hash.
func (x *slotIndex) cellOfSlot(hash uint64, slot int32) int {
	w := wordOf(hash, slot)
	p := x.home(w)
	for x.cells[p].word != w {
		p = x.next(p)
	}
	return p
}

// moved records that slot's data, indexed under hash, now lies at loc.
func (x *slotIndex) moved(hash uint64, slot int32, loc place) {
	x.cells[x.cellOfSlot(hash, slot)].loc = loc
}

// remove takes out slot, indexed under hash. The cells after it that
// probed past it move back (linear probing's deletion, which leaves no
// tombstone for later probes to walk).
func (x *slotIndex) remove(hash uint64, slot int32) {
	p := x.cellOfSlot(hash, slot)
	x.countTag(hash>>32, -1)
	x.count--
	for {
		x.cells[p] = cell{}
		q := p
		for {
			q = x.next(q)
			if x.cells[q].empty() {
				return
			}
			if !x.between(p, x.home(x.cells[q].word), q) {
				break // its probe passes p: it moves there
			}
		}
		x.cells[p] = x.cells[q]
		p = q
	}
}

// between reports whether h lies in the cyclic span (p, q].
func (x *slotIndex) between(p, h, q int) bool {
	if p < q {
		return p < h && h <= q
	}
	return p < h || h <= q
}

// probe calls match with each slot indexed under a hash with hash's tag,
// and the place of its data, from its home, until match reports true; it
// returns that slot, or noSlot.
func (x *slotIndex) probe(hash uint64, match func(int32, place) bool) int32 {
	tag := hash >> 32
	if x.count == 0 || x.tagCounts[x.tagBucket(tag)] == 0 {
		return noSlot
	}
	for p := x.home(hash); !x.cells[p].empty(); p = x.next(p) {
		if c := x.cells[p]; wordTag(c.word) == tag && match(wordSlot(c.word), c.loc) {
			return wordSlot(c.word)
		}
	}
	return noSlot
}
