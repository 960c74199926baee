package rescache

// arena holds a shard's entry data in pages: byte arrays the collector
// marks once each and never scans, which the slots name by page number
// and offset. With a byte slice per entry, every cycle of the collector
// marked each entry's array and scanned each slot for its pointer: with a
// session store's 300,000 entries, a mark phase that took a request's core
// for tens of milliseconds at a time (docs/design/0002, "What the cache
// costs the collector").
//
// Small entries take a place of their size class in a shared page, freed
// places being reused by the next entry of the class; a page is not
// returned until the shard empties. So that a workload whose sizes drift
// cannot fill the shard with pages of classes nobody uses, no shared page
// is made beyond the shard's bound and a margin (limit): past it, and
// for entries larger than the largest class, an entry gets a page of its
// own, exactly its size, returned when the entry goes.
type arena struct {
	pages  [][]byte // by number; nil: a number free for reuse
	owned  []bool   // whether each page is one entry's own
	spare  []int32  // page numbers free for reuse
	shared int64    // bytes of the shared pages
	limit  int64    // most bytes of shared pages
	class  [classCount]classPages
}

// classPages are a size class's free places and the page being carved.
type classPages struct {
	free []place
	page int32 // -1: none
	next int32 // the next unused offset in page
}

// place is where an entry's data lies: page number and offset.
type place struct{ page, off int32 }

const (
	pageSize = 32 << 10
	// classStep is the classes' spacing below 256 bytes; above, each
	// class is at most an eighth larger than the one before, so a place
	// wastes at most that share of itself.
	classStep = 16
	maxClass  = 4096
)

// classCount is the number of size classes: 16 to 256 bytes by 16, then
// eight to each doubling up to maxClass.
const classCount = 256/classStep + 4*8

// classOf is the smallest class that holds n bytes; ok is false above
// maxClass.
func classOf(n int) (int, bool) {
	switch {
	case n > maxClass:
		return 0, false
	case n <= 256:
		return max(n-1, 0) / classStep, true
	}
	base := 256
	for n > 2*base {
		base *= 2
	}
	eighths := (8*(n-base) + base - 1) / base // 1 to 8
	return 256/classStep + 8*log2(base/256) + eighths - 1, true
}

// classSize is the bytes of a place of class c.
func classSize(c int) int32 {
	if c < 256/classStep {
		return int32(c+1) * classStep
	}
	c -= 256 / classStep
	base := int32(256) << (c / 8)
	return base + int32(c%8+1)*base/8
}

func log2(n int) int {
	k := 0
	for n > 1 {
		n, k = n/2, k+1
	}
	return k
}

// init empties the arena, sizing its shared pages for a shard of max
// bytes: the bound, a quarter more for the classes' rounding, and one
// page for each of a few classes in use.
func (a *arena) init(max int64) {
	*a = arena{limit: max + max/4 + 8*pageSize}
	for i := range a.class {
		a.class[i].page = -1
	}
}

// bytes is the data at p, n bytes long.
func (a *arena) bytes(p place, n int32) []byte {
	return a.pages[p.page][p.off : p.off+n : p.off+n]
}

// prefix is the first n bytes from p, up to the end of p's page: ok is
// false when the page ends first. A probe compares a key with them before
// it knows the length of the data at p (shard.find).
func (a *arena) prefix(p place, n int) (b []byte, ok bool) {
	page := a.pages[p.page]
	if int(p.off)+n > len(page) {
		return nil, false
	}
	return page[p.off : int(p.off)+n], true
}

// alloc returns a place for n bytes of data.
func (a *arena) alloc(n int) place {
	c, ok := classOf(n)
	if !ok {
		return a.ownPage(n)
	}
	cp := &a.class[c]
	if k := len(cp.free); k > 0 {
		p := cp.free[k-1]
		cp.free = cp.free[:k-1]
		return p
	}
	size := classSize(c)
	if cp.page < 0 || cp.next+size > pageSize {
		if a.shared+pageSize > a.limit {
			return a.ownPage(n)
		}
		cp.page, cp.next = a.newPage(pageSize, false), 0
		a.shared += pageSize
	}
	p := place{page: cp.page, off: cp.next}
	cp.next += size
	return p
}

// release gives back the place of n bytes of data at p.
func (a *arena) release(p place, n int) {
	if a.owned[p.page] {
		a.pages[p.page], a.owned[p.page] = nil, false
		a.spare = append(a.spare, p.page)
		return
	}
	c, _ := classOf(n)
	a.class[c].free = append(a.class[c].free, p)
}

// holds reports whether the place p, holding old bytes, can hold n bytes
// instead: a place of the same class in a shared page.
func (a *arena) holds(p place, old, n int) bool {
	if a.owned[p.page] {
		return false
	}
	was, _ := classOf(old)
	c, ok := classOf(n)
	return ok && c == was
}

// ownPage is a page of exactly n bytes for one entry.
func (a *arena) ownPage(n int) place {
	return place{page: a.newPage(n, true)}
}

func (a *arena) newPage(n int, owned bool) int32 {
	b := make([]byte, n)
	if k := len(a.spare); k > 0 {
		i := a.spare[k-1]
		a.spare = a.spare[:k-1]
		a.pages[i], a.owned[i] = b, owned
		return i
	}
	a.pages = append(a.pages, b)
	a.owned = append(a.owned, owned)
	return int32(len(a.pages) - 1)
}
