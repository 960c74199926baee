package rescache

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestSizeClasses checks every size a shared page takes: its class is the
// smallest that holds it, and wastes at most 15 bytes up to 256 and an
// eighth of the place above.
func TestSizeClasses(t *testing.T) {
	if c, ok := classOf(maxClass); !ok || c != classCount-1 || classSize(c) != maxClass {
		t.Fatalf("classOf(%d) = %d, %v; want the last class, %d bytes", maxClass, c, ok, maxClass)
	}
	if _, ok := classOf(maxClass + 1); ok {
		t.Fatalf("classOf(%d) gave a class: larger entries take their own page", maxClass+1)
	}
	for c := 1; c < classCount; c++ {
		if classSize(c) <= classSize(c-1) {
			t.Fatalf("class %d (%d bytes) not larger than class %d (%d)", c, classSize(c), c-1, classSize(c-1))
		}
	}
	for n := 1; n <= maxClass; n++ {
		c, ok := classOf(n)
		size := int(classSize(c))
		switch {
		case !ok || size < n:
			t.Fatalf("%d bytes: class %d of %d bytes", n, c, size)
		case c > 0 && int(classSize(c-1)) >= n:
			t.Fatalf("%d bytes: class %d, but class %d (%d bytes) holds them", n, c, c-1, classSize(c-1))
		case n <= 256 && size-n >= classStep, n > 256 && 8*(size-n) > size:
			t.Fatalf("%d bytes in a place of %d", n, size)
		}
	}
}

// TestSlotsHoldNoPointers: the collector skips what holds no pointer. A
// field that points into the heap, added to a slot or to the indexes,
// would have it scan the whole table on every cycle again.
func TestSlotsHoldNoPointers(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[slot](), reflect.TypeFor[heapPlace](), reflect.TypeFor[place](),
		reflect.TypeOf(slotIndex{}.cells).Elem(), // the indexes' cells
	} {
		if path, ok := pointerIn(typ, typ.String()); ok {
			t.Errorf("%s holds a pointer at %s", typ, path)
		}
	}
}

// pointerIn finds a field of typ that holds a pointer; a map counts by
// its keys and values.
func pointerIn(typ reflect.Type, path string) (string, bool) {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.String, reflect.Interface,
		reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return path, true
	case reflect.Array:
		return pointerIn(typ.Elem(), path+"[]")
	case reflect.Map:
		if p, ok := pointerIn(typ.Key(), path+" key"); ok {
			return p, true
		}
		return pointerIn(typ.Elem(), path+" value")
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if p, ok := pointerIn(f.Type, path+"."+f.Name); ok {
				return p, true
			}
		}
	}
	return "", false
}

// TestFullCacheIsFewObjects counts the heap objects a cache of 20,000
// entries keeps alive: its pages and tables, not an object per entry.
func TestFullCacheIsFewObjects(t *testing.T) {
	const n = 20000
	before := liveObjects()
	c := newTest(64<<20, nil)
	for i := range n {
		c.Written(fmt.Appendf(nil, "d%06d", i), []byte(strings.Repeat("v", 100+i%300)), KeepHeld)
	}
	after := liveObjects()
	if got := c.Stats().Items; got != n {
		t.Fatalf("%d entries held, want %d", got, n)
	}
	if grew := after - before; grew > n/10 {
		t.Fatalf("%d entries keep %d more heap objects alive, want at most %d", n, grew, n/10)
	}
	runtime.KeepAlive(c)
}

func liveObjects() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapObjects)
}

// TestValuesOutliveTheirPlace: what Get and GetRange return is the
// caller's, unchanged when a write then reuses the entry's place.
func TestValuesOutliveTheirPlace(t *testing.T) {
	c := newTest(1<<20, nil)
	c.Written([]byte("d1"), []byte("first"), KeepHeld)
	c.FillRange([]byte("ab"), []byte("ac"), []KV{{Key: []byte("ab1"), Value: []byte("one")}}, rangeTicket(c, "ab"))
	v, _, ok := c.Get([]byte("d1"))
	it, _, rok := c.GetRange([]byte("ab"))
	if !ok || !rok {
		t.Fatalf("value held %v, range held %v", ok, rok)
	}
	c.Written([]byte("d1"), []byte("other"), KeepHeld) // the place of "first", freed and taken again
	c.InstallRange([]byte("ab"), []KV{{Key: []byte("ab2"), Value: []byte("two")}})
	if string(v) != "first" {
		t.Fatalf("value read before the write became %q", v)
	}
	if !it.First() || string(it.Key()) != "ab1" || string(it.Value()) != "one" {
		t.Fatalf("range read before the write now holds %q %q", it.Key(), it.Value())
	}
}

func rangeTicket(c *Cache, lo string) Ticket {
	_, t, _ := c.GetRange([]byte(lo))
	return t
}

// TestArenaReusesPlacesAndStaysBounded: freed places of a class serve the
// next entries of that class; once the shared pages reach the limit,
// entries take pages of their own, which go back with them, their
// numbers reused.
func TestArenaReusesPlacesAndStaysBounded(t *testing.T) {
	var a arena
	a.init(4 * pageSize)
	p := a.alloc(100)
	a.release(p, 100)
	if q := a.alloc(97); q != p {
		t.Fatalf("a freed place of the class was not reused: %v then %v", p, q)
	}
	var held []place
	for a.shared+pageSize <= a.limit {
		held = append(held, a.alloc(2000))
	}
	own := a.alloc(3000) // a class whose page would pass the limit
	if !a.owned[own.page] || len(a.bytes(own, 3000)) != 3000 {
		t.Fatalf("past the limit: page %d owned %v", own.page, a.owned[own.page])
	}
	if a.shared > a.limit {
		t.Fatalf("shared pages %d past the limit %d", a.shared, a.limit)
	}
	a.release(own, 3000)
	if a.pages[own.page] != nil {
		t.Fatal("an entry's own page outlived it")
	}
	big := a.alloc(maxClass + 1)
	if !a.owned[big.page] || big.page != own.page {
		t.Fatalf("a large entry: page %d owned %v, want the freed number %d reused", big.page, a.owned[big.page], own.page)
	}
	if len(held) == 0 {
		t.Fatal("no shared page was made")
	}
}

// TestEmptiedShardDropsItsPages: when the last entry of a shard goes, so
// do its pages.
func TestEmptiedShardDropsItsPages(t *testing.T) {
	c := newTest(1<<20, nil)
	for i := range 100 {
		c.Written(fmt.Appendf(nil, "d%03d", i), []byte("value"), KeepHeld)
	}
	c.Reset()
	for i := range c.shards {
		if n := len(c.shards[i].arena.pages); n != 0 {
			t.Fatalf("shard %d keeps %d pages with nothing in it", i, n)
		}
	}
}
