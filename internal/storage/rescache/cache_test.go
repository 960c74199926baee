package rescache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// policy admits every key but family members; a value "exp:<unix ns>" expires then; an
// equality prefix is a key's first two bytes.
func testPolicy() Policy {
	return Policy{
		Admit: func(k []byte) bool { return len(k) == 0 || k[0] != 'f' },
		ExpiresAt: func(_, v []byte) (int64, bool) {
			var at int64
			n, _ := fmt.Sscanf(string(v), "exp:%d", &at)
			return at, n == 1
		},
		// "f<date><id>": the newest of each <id>'s members is held as
		// family "f<id>" (never a key Admit takes).
		Family: func(k []byte) (int, int, bool) {
			if len(k) < 2 || k[0] != 'f' {
				return 0, 0, false
			}
			return 1, len(k) - 1, true
		},
		EqualityLen: func(k []byte) (int, bool) { return 2, len(k) >= 2 },
		Resets:      func(k []byte) bool { return len(k) > 0 && k[0] == 'c' },
	}
}

func newTest(maxBytes int64, clk clock.Clock) *Cache {
	c := New(maxBytes, clk)
	c.SetPolicy(testPolicy())
	return c
}

func fill(c *Cache, key, value string) {
	_, t, _ := c.Get([]byte(key))
	c.Fill([]byte(key), []byte(value), t)
}

func TestGetFillHit(t *testing.T) {
	c := newTest(1<<20, nil)
	if _, _, ok := c.Get([]byte("d1")); ok {
		t.Fatal("empty cache hit")
	}
	fill(c, "d1", "v1")
	v, _, ok := c.Get([]byte("d1"))
	if !ok || string(v) != "v1" {
		t.Fatalf("got %q %v", v, ok)
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 2 || st.Items != 1 || st.Bytes <= 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A write between a read's ticket and its fill keeps the read's (stale)
// value out.
func TestFillAfterWriteIsDropped(t *testing.T) {
	c := newTest(1<<20, nil)
	_, ticket, _ := c.Get([]byte("d1"))
	c.Invalidate([]byte("d1"))
	c.Fill([]byte("d1"), []byte("old"), ticket)
	if _, _, ok := c.Get([]byte("d1")); ok {
		t.Fatal("a fill older than a write was kept")
	}
	_, ticket, _ = c.Get([]byte("d1"))
	c.Invalidate([]byte("d1"))
	c.Written([]byte("d1"), []byte("new"), KeepHeld)
	c.Fill([]byte("d1"), []byte("old"), ticket)
	if v, _, _ := c.Get([]byte("d1")); string(v) != "new" {
		t.Fatalf("got %q, want the installed value", v)
	}
}

func TestBoundedByBytes(t *testing.T) {
	const maxBytes = 64 << 10
	c := newTest(maxBytes, nil)
	for i := range 5000 {
		fill(c, fmt.Sprintf("d%05d", i), "0123456789012345678901234567890123456789")
		if b := c.Stats().Bytes; b > maxBytes {
			t.Fatalf("after %d fills: %d bytes > %d", i+1, b, maxBytes)
		}
	}
	st := c.Stats()
	if st.Evictions == 0 || st.Items == 0 || st.Bytes < maxBytes/2 {
		t.Fatalf("stats %+v: expected a full cache that evicted", st)
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := newTest(16*(itemOverhead+8)*shardCount, nil)
	fill(c, "hot", "v")
	for i := range 2000 {
		fill(c, fmt.Sprintf("d%05d", i), "v")
		if _, _, ok := c.Get([]byte("hot")); !ok {
			t.Fatalf("the key read after every fill was evicted after %d fills", i+1)
		}
	}
}

func TestExpiredValuesLeaveWhenTheyExpire(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := newTest(1<<20, clk)
	at := clk.Now().Add(time.Second).UnixNano()
	for i := range 50 {
		fill(c, fmt.Sprintf("d%02d", i), fmt.Sprintf("exp:%d", at))
	}
	fill(c, "live", "forever")
	if v, _, ok := c.Get([]byte("d00")); !ok || string(v) == "" {
		t.Fatal("a value was not cached before its expiry")
	}
	clk.Advance(time.Second) // at its expiry: expired ($lte)
	if _, _, ok := c.Get([]byte("d01")); ok {
		t.Fatal("an expired value was served")
	}
	c.Sweep()
	st := c.Stats()
	if st.Items != 1 || st.ExpiredEvictions != 50 {
		t.Fatalf("stats %+v: want only the live value left, 50 expired evictions", st)
	}
	// A value already expired when read is never kept.
	fill(c, "late", fmt.Sprintf("exp:%d", at))
	if c.Stats().Items != 1 {
		t.Fatal("an expired value was kept")
	}
}

func TestRangesAreInvalidatedByTheirKeys(t *testing.T) {
	c := newTest(1<<20, nil)
	lo, hi := []byte("ab"), []byte("ac")
	if !c.Cacheable(lo, hi) || c.Cacheable(lo, []byte("ad")) || c.Cacheable([]byte("a"), []byte("b")) {
		t.Fatal("Cacheable disagrees with the policy")
	}
	_, ticket, _ := c.GetRange(lo)
	c.FillRange(lo, hi, []KV{{Key: []byte("ab1"), Value: []byte("x")}}, ticket)
	if it, _, ok := c.GetRange(lo); !ok || !it.First() || string(it.Key()) != "ab1" || string(it.Value()) != "x" || it.Next() {
		t.Fatal("range not cached")
	}
	c.Invalidate([]byte("ab2")) // a new entry in the range
	if _, _, ok := c.GetRange(lo); ok {
		t.Fatal("a write into the range left it cached")
	}
}

func TestInvalidateRangeAndReset(t *testing.T) {
	c := newTest(1<<20, nil)
	for _, k := range []string{"da1", "da2", "db1", "dc1"} {
		fill(c, k, "v")
	}
	c.InvalidateRange([]byte("da"), []byte("db"))
	for k, want := range map[string]bool{"da1": false, "da2": false, "db1": true, "dc1": true} {
		if _, _, ok := c.Get([]byte(k)); ok != want {
			t.Fatalf("%s cached %v, want %v", k, ok, want)
		}
	}
	c.Invalidate([]byte("c-catalog"))
	if st := c.Stats(); st.Items != 0 {
		t.Fatalf("a catalog write left %d items", st.Items)
	}
}

func TestZeroSizeKeepsNothing(t *testing.T) {
	c := newTest(0, nil)
	fill(c, "d1", "v")
	for _, keep := range []Keep{KeepHeld, KeepSpare} {
		c.Invalidate([]byte("d2"))
		c.Written([]byte("d2"), []byte("v"), keep)
	}
	if st := c.Stats(); st.Items != 0 {
		t.Fatalf("a cache of size 0 holds %d items", st.Items)
	}
}

func TestSliceIter(t *testing.T) {
	it := NewSliceIter([]KV{{Key: []byte("a")}, {Key: []byte("c")}})
	if it.Valid() || !it.First() || string(it.Key()) != "a" || !it.Next() || it.Next() {
		t.Fatal("forward walk")
	}
	if !it.SeekGE([]byte("b")) || string(it.Key()) != "c" || !it.SeekLT([]byte("c")) || string(it.Key()) != "a" || it.Prev() {
		t.Fatal("seeks")
	}
	if !it.Last() || string(it.Key()) != "c" || it.SeekGE([]byte("d")) {
		t.Fatal("last")
	}
}

// A write while no range is held skips finding its key's range; a range
// read that began before it still must not fill the cache.
func TestRangeFillAfterAWriteWithNoRangesIsDropped(t *testing.T) {
	c := newTest(1<<20, nil)
	lo, hi := []byte("ab"), []byte("ac")
	_, ticket, _ := c.GetRange(lo)
	c.Invalidate([]byte("ab1"))
	c.FillRange(lo, hi, nil, ticket)
	if _, _, ok := c.GetRange(lo); ok {
		t.Fatal("a range read before a write into it was kept")
	}
}

// A read that begins while a write of its key is under way (between
// Invalidate and Written) may read the old value: its fill is refused,
// during the write and after it; a read after the write fills again.
func TestFillDuringAWriteIsDropped(t *testing.T) {
	c := newTest(1<<20, nil)
	key := []byte("d1")
	c.Invalidate(key)
	_, during, _ := c.Get(key)
	c.Fill(key, []byte("old"), during)
	if _, _, ok := c.Get(key); ok {
		t.Fatal("a fill during a write was kept")
	}
	_, during, _ = c.Get(key)
	c.Written(key, nil, KeepNone)
	c.Fill(key, []byte("old"), during)
	if _, _, ok := c.Get(key); ok {
		t.Fatal("a fill begun during a write and ended after it was kept")
	}
	fill(c, "d1", "new")
	if v, _, _ := c.Get(key); string(v) != "new" {
		t.Fatalf("after the write, a fill kept %q", v)
	}
}

// A write in a group none of whose ranges is held skips the range
// lookup, yet a range read begun before it is still refused; a write in
// a group with a held range drops it.
func TestRangeGroups(t *testing.T) {
	c := New(1<<20, nil)
	p := testPolicy()
	p.RangeGroupLen = 1
	c.SetPolicy(p)
	held, hi := []byte("ab"), []byte("ac")
	_, ticket, _ := c.GetRange(held)
	c.FillRange(held, hi, []KV{{Key: []byte("ab1"), Value: []byte("x")}}, ticket)
	other := []byte("xb")
	_, otherTicket, _ := c.GetRange(other)
	c.Invalidate([]byte("xb1"))
	c.Written([]byte("xb1"), nil, KeepNone)
	c.FillRange(other, []byte("xc"), nil, otherTicket)
	if _, _, ok := c.GetRange(other); ok {
		t.Fatal("a range read before a write into its group was kept")
	}
	if _, _, ok := c.GetRange(held); !ok {
		t.Fatal("a write in another group dropped a held range")
	}
	c.Invalidate([]byte("ab2"))
	c.Written([]byte("ab2"), nil, KeepNone)
	if _, _, ok := c.GetRange(held); ok {
		t.Fatal("a write into a held range left it cached")
	}
}

// written is a write of key with value, kept as keep says.
func written(c *Cache, key string, value []byte, keep Keep) bool {
	c.Invalidate([]byte(key))
	return c.Written([]byte(key), value, keep)
}

// TestKeepSpareNeverEvicts: KeepSpare keeps written values while their
// shard has room and refuses the rest, evicting nothing; KeepHeld of the
// same values evicts the least recently used.
func TestKeepSpareNeverEvicts(t *testing.T) {
	c := newTest(shardCount*1024, nil)
	kept := 0
	for i := range 1000 {
		if written(c, fmt.Sprintf("k%04d", i), make([]byte, 100), KeepSpare) {
			kept++
		}
	}
	st := c.Stats()
	if kept == 0 || kept == 1000 || st.Evictions != 0 || int(st.Items) != kept || st.Bytes > st.MaxBytes {
		t.Fatalf("KeepSpare kept %d of 1,000: %+v; want some, within the bound, none evicted", kept, st)
	}
	// A refused value is not copied: a bulk load into a full cache
	// allocates nothing for it.
	key, value := []byte("k9999"), make([]byte, 100)
	if allocs := testing.AllocsPerRun(100, func() {
		c.Invalidate(key)
		if c.Written(key, value, KeepSpare) {
			t.Fatal("KeepSpare kept a value in a full cache")
		}
	}); allocs != 0 {
		t.Fatalf("a refused KeepSpare write made %.0f allocations", allocs)
	}
	for i := range 1000 {
		written(c, fmt.Sprintf("n%04d", i), make([]byte, 100), KeepHeld)
	}
	if c.Stats().Evictions == 0 {
		t.Fatal("KeepHeld into a full cache evicted nothing")
	}
}

// slotOf is the slot holding key's value, and the place of its data.
func slotOf(c *Cache, key string) (int32, place) {
	sk := plainKey([]byte(key))
	h := c.hashOf(sk)
	sh := c.shardOf(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.find(false, h, sk)
	return i, sh.at(i).loc
}

// TestWriteReplacesTheValueInPlace: a write of a held value keeps its
// slot, and its data's place while the size class is the same; no read
// finds the value while the write is under way; the new value's expiry,
// later or earlier, is the one that counts; a failed write removes it.
func TestWriteReplacesTheValueInPlace(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := newTest(1<<20, clk)
	at := func(d time.Duration) string { return fmt.Sprintf("exp:%d", clk.Now().Add(d).UnixNano()) }
	fill(c, "d1", at(time.Second))
	slot, loc := slotOf(c, "d1")
	write := func(v string, keep Keep) {
		t.Helper()
		if !c.Invalidate([]byte("d1")) && keep == KeepHeld {
			t.Fatal("the value was not held when its write began")
		}
		if _, _, ok := c.Get([]byte("d1")); ok {
			t.Fatal("a value was served while a write of it was under way")
		}
		c.Written([]byte("d1"), []byte(v), keep)
		checkCounters(t, c)
	}
	later := at(3 * time.Second)
	write(later, KeepHeld)
	if s, l := slotOf(c, "d1"); s != slot || l != loc {
		t.Fatalf("slot %d at %v became %d at %v: the write moved a value of the same size", slot, loc, s, l)
	}
	clk.Advance(2 * time.Second) // past the old expiry, before the new one
	if v, _, ok := c.Get([]byte("d1")); !ok || string(v) != later {
		t.Fatalf("got %q %v after the old expiry, want the rewritten value", v, ok)
	}
	sooner := at(time.Second) + strings.Repeat(" ", 300) // another size class
	write(sooner, KeepHeld)
	if s, _ := slotOf(c, "d1"); s != slot {
		t.Fatalf("slot %d became %d", slot, s)
	}
	clk.Advance(time.Second)
	if _, _, ok := c.Get([]byte("d1")); ok {
		t.Fatal("served after the new, earlier expiry")
	}
	fill(c, "d1", "v")
	write("", KeepNone)
	if _, _, ok := c.Get([]byte("d1")); ok || c.Stats().Items != 0 {
		t.Fatalf("a failed write left its value: %+v", c.Stats())
	}
}

// TestMovedValueIsFound rewrites a held value across size classes (and to
// and from a page of its own), lets another value take the place it left,
// and reads it: the index's cell must name the value's new place, or the
// read would compare the key with its neighbour's and miss.
func TestMovedValueIsFound(t *testing.T) {
	sizes := []int{8, 40, 300, 8, 5000, 300, 9000, 8}
	c := newTest(1<<20, nil)
	written(c, "k", make([]byte, sizes[0]), KeepHeld)
	for i, n := range sizes[1:] {
		_, was := slotOf(c, "k")
		v := bytes.Repeat([]byte{byte('a' + i)}, n)
		written(c, "k", v, KeepHeld)
		if _, now := slotOf(c, "k"); now == was {
			t.Fatalf("%d → %d bytes: the value kept its place %v", sizes[i], n, was)
		}
		// Another value of the old size takes the place the first left.
		written(c, fmt.Sprintf("other%d", i), make([]byte, sizes[i]), KeepHeld)
		if got, _, ok := c.Get([]byte("k")); !ok || !bytes.Equal(got, v) {
			t.Fatalf("%d → %d bytes: read %d bytes, hit %v", sizes[i], n, len(got), ok)
		}
		checkCounters(t, c)
	}
}

// TestAgainstAModel runs random reads, fills, installs, writes and
// evictions, with keys made to share hashes (so the shards' chains are
// walked, cut in the middle and emptied), family members (several keys,
// one slot) and values that expire, against
// a map of what storage holds: the cache may miss, never serve a value
// storage no longer holds or one that has expired, and its counters
// agree with its contents.
func TestAgainstAModel(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_000, 0))
	c := newTest(shardCount*2000, clk)
	c.testHash = func(k []byte) uint64 { return uint64(k[len(k)-1] % 8) }
	rng := rand.New(rand.NewPCG(1, 2))
	stored := map[string]string{}
	value := func() string {
		if rng.IntN(3) == 0 {
			return fmt.Sprintf("exp:%d", clk.Now().Add(time.Duration(rng.IntN(50))*time.Millisecond).UnixNano())
		}
		return fmt.Sprintf("v%d", rng.IntN(1000))
	}
	for step := range 20_000 {
		key := fmt.Sprintf("d%d", rng.IntN(40))
		if rng.IntN(2) == 0 {
			key = fmt.Sprintf("f%02d%c", rng.IntN(5), 'a'+rng.IntN(4))
		}
		switch rng.IntN(6) {
		case 0, 1: // a read, filled from storage on a miss
			v, ticket, ok := c.Get([]byte(key))
			want, inStorage := stored[key]
			if ok && (!inStorage || string(v) != want) {
				t.Fatalf("step %d: %s served %q, storage holds %q (%v)", step, key, v, want, inStorage)
			}
			if ok && strings.HasPrefix(want, "exp:") {
				var at int64
				fmt.Sscanf(want, "exp:%d", &at)
				if at <= clk.Now().UnixNano() {
					t.Fatalf("step %d: %s served after its expiry", step, key)
				}
			}
			if !ok && inStorage {
				c.Fill([]byte(key), []byte(want), ticket)
			}
		case 2, 3: // a write, installed where held or into spare room
			v := value()
			held := c.Invalidate([]byte(key))
			if _, _, ok := c.Get([]byte(key)); ok {
				t.Fatalf("step %d: %s served while a write of it was under way", step, key)
			}
			stored[key] = v
			keep := KeepSpare
			if held {
				keep = KeepHeld
			}
			c.Written([]byte(key), []byte(v), keep)
		case 4: // a delete
			c.Invalidate([]byte(key))
			delete(stored, key)
			c.Written([]byte(key), nil, KeepNone)
		case 5:
			if rng.IntN(25) == 0 { // a range deletion
				start, end := "d1", "d2"
				if rng.IntN(2) == 0 {
					start, end = "f01", "f03"
				}
				for k := range stored {
					if k >= start && k < end {
						delete(stored, k)
					}
				}
				c.InvalidateRange([]byte(start), []byte(end))
			}
			clk.Advance(time.Millisecond)
		}
		if step%500 == 0 {
			checkCounters(t, c)
		}
	}
	checkCounters(t, c)
	if st := c.Stats(); st.Hits < 1000 {
		t.Fatalf("stats %+v: the run hardly read the cache", st)
	}
}

// checkCounters compares the cache's counters with its slots.
func checkCounters(t *testing.T, c *Cache) {
	t.Helper()
	var items, bytes int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		var shardBytes int64
		for j := int32(1); j < sh.slotCount(); j++ {
			if s := sh.at(j); s.used {
				items++
				shardBytes += int64(s.size)
				e := sh.held(j)
				if k := e.appendMemberKey(nil); !sh.heads.mayMeet(k, append(k[:len(k):len(k)], 0)) {
					t.Fatalf("shard %d holds %q, not in its heads", i, k)
				}
			}
		}
		if shardBytes != sh.bytes || sh.bytes > sh.max {
			t.Fatalf("shard %d: %d bytes counted, slots hold %d, bound %d", i, sh.bytes, shardBytes, sh.max)
		}
		bytes += shardBytes
		sh.mu.Unlock()
	}
	if st := c.Stats(); st.Items != items || st.Bytes != bytes {
		t.Fatalf("stats %+v; slots hold %d items, %d bytes", st, items, bytes)
	}
}

// TestInvalidateRangeMeetsRanges: a held range (every key starting with
// its lower bound) is dropped by a span that meets it, and only by one.
func TestInvalidateRangeMeetsRanges(t *testing.T) {
	for _, tc := range []struct {
		start, end string // "" end: no upper bound
		dropped    bool
	}{
		{"aa1", "ab0", true}, {"ab5", "ab6", true}, {"ab", "ac", true}, {"a", "", true},
		{"ac", "", false}, {"a", "ab", false}, {"ab\xff", "ac", true}, {"aa", "aa9", false},
	} {
		c := newTest(1<<20, nil)
		_, ticket, _ := c.GetRange([]byte("ab"))
		c.FillRange([]byte("ab"), []byte("ac"), []KV{{Key: []byte("ab1"), Value: []byte("x")}}, ticket)
		var end []byte
		if tc.end != "" {
			end = []byte(tc.end)
		}
		c.InvalidateRange([]byte(tc.start), end)
		if _, _, held := c.GetRange([]byte("ab")); held == tc.dropped {
			t.Errorf("[%q, %q): range [ab, ac) held %v, want %v", tc.start, tc.end, held, !tc.dropped)
		}
	}
}

// TestInstallRange: a commit's writer installs the range it knows; a
// read of storage that began before the install does not replace it; an
// install, like KeepSpare, takes only spare room, and a refused one
// allocates nothing.
func TestInstallRange(t *testing.T) {
	c := newTest(1<<20, nil)
	lo, hi := []byte("ab"), []byte("ac")
	_, before, _ := c.GetRange(lo) // a read that began before the commit
	c.InstallRange(lo, []KV{{Key: []byte("ab1"), Value: []byte("new")}})
	c.FillRange(lo, hi, nil, before) // what that read found: nothing yet
	it, _, ok := c.GetRange(lo)
	if !ok || !it.First() || string(it.Key()) != "ab1" || string(it.Value()) != "new" || it.Next() {
		t.Fatal("the installed range is not what the cache serves")
	}
	c.InstallRange([]byte("a"), []KV{{Key: []byte("a1"), Value: []byte("x")}})
	if _, _, ok := c.GetRange([]byte("a")); ok {
		t.Fatal("a range that is not an equality range was installed")
	}

	// Every shard holds four values and has less room left than an empty
	// range takes.
	full := newTest(shardCount*1024, nil)
	for i := range 1000 {
		written(full, fmt.Sprintf("k%04d", i), make([]byte, 112), KeepHeld)
	}
	st := full.Stats()
	zlo, zhi, entry := []byte("zz"), []byte("z{"), []KV{{Key: []byte("zz1"), Value: make([]byte, 100)}}
	if allocs := testing.AllocsPerRun(100, func() { full.InstallRange(zlo, entry) }); allocs != 0 {
		t.Fatalf("an install refused for want of room made %.0f allocations", allocs)
	}
	if after := full.Stats(); after.Evictions != st.Evictions || after.Items != st.Items {
		t.Fatalf("an install into a full cache evicted: %+v, then %+v", st, after)
	}
	// Nor does a read that found a range empty (a unique index's check
	// before its insert claims the value).
	_, ticket, _ := full.GetRange(zlo)
	full.FillRange(zlo, zhi, nil, ticket)
	if after := full.Stats(); after.Evictions != st.Evictions || after.Items != st.Items {
		t.Fatalf("an empty range filled into a full cache evicted: %+v, then %+v", st, after)
	}
}

// TestSlotKeyPiecesAgreeWithTheJoinedKey holds a key looked up in two
// pieces (a family's) to the hash and equality of the same bytes
// joined, as entries store them: a split anywhere, an empty piece
// included.
func TestSlotKeyPiecesAgreeWithTheJoinedKey(t *testing.T) {
	c := New(1<<20, nil)
	for _, joined := range []string{"", "a", "family-key", strings.Repeat("x", 300)} {
		for cut := 0; cut <= len(joined); cut++ {
			k := slotKey{head: []byte(joined[:cut]), tail: []byte(joined[cut:])}
			if got, want := c.hashOf(k), c.hashOf(plainKey([]byte(joined))); got != want {
				t.Fatalf("%q cut at %d: hash %x, joined %x", joined, cut, got, want)
			}
			if !k.equal([]byte(joined)) || k.equal([]byte(joined+"!")) || string(k.appendTo(nil)) != joined {
				t.Fatalf("%q cut at %d: equality or bytes differ", joined, cut)
			}
		}
	}
}

// BenchmarkGetHit reads values at random from a cache holding 100,000 of
// them (a session store's documents): the index's probe, the slot, the
// data's copy.
//
//	go test ./internal/storage/rescache -run XXX -bench GetHit
func BenchmarkGetHit(b *testing.B) {
	const n = 100_000
	c := newTest(int64(n)*(itemOverhead+300), nil)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "d%08x", uint32(i)*2654435761)
		written(c, string(keys[i]), make([]byte, 180), KeepHeld)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for range b.N {
		if _, _, ok := c.Get(keys[rng.IntN(n)]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkWriteNotHeld writes keys the cache does not hold beside
// 100,000 and 1,000,000 values it does (a bulk load into a full cache, a
// member applying one): the write's start and end each ask the index.
//
//	go test ./internal/storage/rescache -run XXX -bench WriteNotHeld
func BenchmarkWriteNotHeld(b *testing.B) {
	for _, held := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			c := heldValues(held)
			key := []byte("n")
			b.ResetTimer()
			for i := range b.N {
				key = binary.BigEndian.AppendUint64(key[:1], uint64(i)*0x9e3779b97f4a7c15)
				c.Invalidate(key)
				if c.Written(key, nil, KeepNone) {
					b.Fatal("a deletion kept a value")
				}
			}
		})
	}
}

// heldValues is a cache holding n values of 180 bytes.
func heldValues(n int) *Cache {
	c := newTest(int64(n)*(itemOverhead+300), nil)
	for i := range n {
		written(c, fmt.Sprintf("d%08x", uint32(i)*2654435761), make([]byte, 180), KeepHeld)
	}
	return c
}

// BenchmarkInvalidateRangeOutside: a range deletion of keys the cache
// never holds (the raft log's compaction) beside a full cache.
func BenchmarkInvalidateRangeOutside(b *testing.B) {
	for _, held := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			c := heldValues(held)
			b.ResetTimer()
			for range b.N {
				c.InvalidateRange([]byte("r\x00"), []byte("r\x01"))
			}
			b.StopTimer()
			if st := c.Stats(); st.Items != int64(held) {
				b.Fatalf("%d items held after the deletions, want %d", st.Items, held)
			}
		})
	}
}

// TestHeadsNeverMissAKey: for random keys, ranges and spans, a set of
// heads that holds a key's (or a range's) first byte reports that it may
// meet every span the key or range meets.
func TestHeadsNeverMissAKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	randKey := func(maxLen int) []byte { return randomKey(rng, []byte{0, 1, 'a', 'b', 0x7f, 0xfe, 0xff}, maxLen) }
	for range 200_000 {
		key, isRange := randKey(3), rng.IntN(2) == 0
		start, end := randKey(3), randKey(3)
		if rng.IntN(5) == 0 {
			end = nil
		}
		e := entry{slot: slot{keyLen: int32(len(key)), isRange: isRange}, data: key}
		var h heads
		h.add(key)
		if e.meets(start, end) && !h.mayMeet(start, end) {
			t.Fatalf("key %q (range %v) meets [%q, %q) but its heads say not", key, isRange, start, end)
		}
	}
	var h heads
	h.add([]byte("d1"))
	if h.mayMeet([]byte{'r', 'l'}, []byte{'r', 'm'}) || h.mayMeet([]byte("e"), nil) || h.mayMeet(nil, []byte{}) {
		t.Fatal("heads of \"d\" meet a span of other first bytes")
	}
}

// TestInvalidateRangeOutsideRefusesEarlierFills: a range deletion no held
// key falls in skips the walk, yet a read of storage from before it does
// not fill after it; the entries held stay.
func TestInvalidateRangeOutsideRefusesEarlierFills(t *testing.T) {
	c := newTest(1<<20, nil)
	fill(c, "d1", "v1")
	_, ticket, _ := c.Get([]byte("r5"))
	c.InvalidateRange([]byte("r"), []byte("s"))
	c.Fill([]byte("r5"), []byte("old"), ticket)
	if _, _, ok := c.Get([]byte("r5")); ok {
		t.Fatal("a read from before the range deletion filled after it")
	}
	if _, _, ok := c.Get([]byte("d1")); !ok {
		t.Fatal("a range deletion of other keys dropped d1")
	}
	for i := range c.shards {
		if sh := &c.shards[i]; sh.bytes == 0 && sh.heads != (heads{}) {
			t.Fatalf("shard %d is empty and keeps heads %+v", i, sh.heads)
		}
	}
}

// TestComparePiecesAgreesWithJoined: a key compared in three pieces
// orders as the joined key does, for random pieces and bounds.
func TestComparePiecesAgreesWithJoined(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	randBytes := func(maxLen int) []byte { return randomKey(rng, []byte{0, 1, 'a', 0xff}, maxLen) }
	for range 200_000 {
		p := [3][]byte{randBytes(2), randBytes(2), randBytes(2)}
		b := randBytes(6)
		joined := append(append(append([]byte(nil), p[0]...), p[1]...), p[2]...)
		if got, want := comparePieces(p, b), bytes.Compare(joined, b); got != want {
			t.Fatalf("pieces %q vs %q: %d, joined %q: %d", p, b, got, joined, want)
		}
	}
}

// TestFamilyHoldsItsMemberOnce: a family's slot holds the member's own
// part, not its whole key again, and still tells its member from every
// other of the family, an empty own part included.
func TestFamilyHoldsItsMemberOnce(t *testing.T) {
	c := newTest(1<<20, nil)
	members := []string{"fz", "f1z", "f12z", "f2z"} // family "fz": own parts "", "1", "12", "2"
	for _, held := range members {
		c.Invalidate([]byte(held))
		c.Written([]byte(held), []byte("v-"+held), KeepHeld)
		sh := c.shardOf(c.hashOf(plainKey([]byte("fz"))))
		sh.mu.Lock()
		i := sh.find(false, c.hashOf(plainKey([]byte("fz"))), plainKey([]byte("fz")))
		e := sh.held(i)
		sh.mu.Unlock()
		if own := len(held) - 2; len(e.data) != 2+2+own+len("v-"+held) {
			t.Fatalf("%q: data %q, %d bytes", held, e.data, len(e.data))
		}
		if k := e.appendMemberKey(nil); string(k) != held {
			t.Fatalf("held %q, member key %q", held, k)
		}
		for _, other := range members {
			v, _, ok := c.Get([]byte(other))
			if ok != (other == held) || (ok && string(v) != "v-"+held) {
				t.Fatalf("holding %q, Get(%q) = %q %v", held, other, v, ok)
			}
		}
	}
	checkCounters(t, c)
}

// randomKey is up to maxLen bytes drawn from alphabet.
func randomKey(rng *rand.Rand, alphabet []byte, maxLen int) []byte {
	k := make([]byte, rng.IntN(maxLen+1))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}
