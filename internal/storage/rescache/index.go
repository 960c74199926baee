package rescache

// slotIndex finds the slots of a shard's values (or ranges) by their keys'
// hashes: an open-addressing table of 8-byte cells, each a hash's upper
// half (its tag) beside a slot number, probed linearly from the cell the
// tag names. A lookup's probe reads one cache line, most often; Go's map
// read a group's control word and then the group's slot, two lines, each
// a miss once a shard holds tens of thousands of entries. Holding no
// pointer, the table is one object the collector never scans.
type slotIndex struct {
	cells []uint64 // tag<<32 | slot; 0 is empty (slot 0 is never indexed)
	count int
}

// minCells is an index's first size; it doubles when three quarters full.
const minCells = 64

func cellOf(hash uint64, slot int32) uint64 { return hash&^(1<<32-1) | uint64(uint32(slot)) }

func cellSlot(c uint64) int32 { return int32(uint32(c)) }

func cellTag(c uint64) uint64 { return c >> 32 }

// home is the cell a probe for c's tag starts at.
func (x *slotIndex) home(c uint64) int { return int(cellTag(c)) & (len(x.cells) - 1) }

// next is the cell after p, wrapping around.
func (x *slotIndex) next(p int) int { return (p + 1) & (len(x.cells) - 1) }

// add indexes slot under hash.
func (x *slotIndex) add(hash uint64, slot int32) {
	if 4*(x.count+1) > 3*len(x.cells) {
		x.grow()
	}
	x.place(cellOf(hash, slot))
	x.count++
}

// place puts c in the first empty cell from its home.
func (x *slotIndex) place(c uint64) {
	p := x.home(c)
	for x.cells[p] != 0 {
		p = x.next(p)
	}
	x.cells[p] = c
}

func (x *slotIndex) grow() {
	old := x.cells
	x.cells = make([]uint64, max(2*len(old), minCells))
	for _, c := range old {
		if c != 0 {
			x.place(c)
		}
	}
}

// remove takes out slot, indexed under hash. The cells after it that
// probed past it move back (linear probing's deletion, which leaves no
// tombstone for later probes to walk).
func (x *slotIndex) remove(hash uint64, slot int32) {
	c := cellOf(hash, slot)
	p := x.home(c)
	for x.cells[p] != c {
		p = x.next(p)
	}
	x.count--
	for {
		x.cells[p] = 0
		q := p
		for {
			q = x.next(q)
			if x.cells[q] == 0 {
				return
			}
			if !x.between(p, x.home(x.cells[q]), q) {
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
// from its home, until match reports true; it returns that slot, or noSlot.
func (x *slotIndex) probe(hash uint64, match func(int32) bool) int32 {
	if x.count == 0 {
		return noSlot
	}
	tag := hash >> 32
	for p := x.home(hash); x.cells[p] != 0; p = x.next(p) {
		if c := x.cells[p]; cellTag(c) == tag && match(cellSlot(c)) {
			return cellSlot(c)
		}
	}
	return noSlot
}
