package rescache

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// warmPolicy is testPolicy with range groups named by a key's first byte.
func warmCache(maxBytes int64, clk clock.Clock) *Cache {
	c := New(maxBytes, clk)
	p := testPolicy()
	p.RangeGroupLen = 1
	c.SetPolicy(p)
	return c
}

func kvs(keys ...string) []KV {
	out := make([]KV, len(keys))
	for i, k := range keys {
		out[i] = KV{Key: []byte(k), Value: []byte("v")}
	}
	return out
}

// A warm-up's range is kept only when nothing that could have changed it
// since its ticket happened: every kind of write into its bucket, and
// InvalidateRange, makes the ticket stale; a range already held stays.
func TestWarmKeepsOnlyWhatNoWriteCrossed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cross func(c *Cache)
		want  WarmResult
	}{
		{"nothing", func(*Cache) {}, WarmKept},
		{"write begun", func(c *Cache) { c.Invalidate([]byte("ab9")) }, WarmStale},
		{"write ended", func(c *Cache) { c.Written([]byte("ab9"), nil, KeepNone) }, WarmStale},
		{"expired deletion", func(c *Cache) { c.DropRangeOf([]byte("ab9")) }, WarmStale},
		{"write in another range of the group", func(c *Cache) { c.Invalidate([]byte("az1")) }, WarmStale},
		{"InvalidateRange", func(c *Cache) { c.InvalidateRange([]byte("x"), []byte("y")) }, WarmStale},
		{"write in another group", func(c *Cache) { c.Invalidate([]byte(otherBucket(c, "a") + "b1")) }, WarmKept},
		{"read filled it", func(c *Cache) {
			_, tk, _ := c.GetRange([]byte("ab"))
			c.FillRange([]byte("ab"), []byte("ac"), kvs("ab1"), tk)
		}, WarmHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := warmCache(1<<20, nil)
			ticket := c.TakeWarmTicket([]byte("a"))
			tc.cross(c)
			if got := c.Warm(ticket, []byte("ab"), kvs("ab1")); got != tc.want {
				t.Fatalf("Warm = %d, want %d", got, tc.want)
			}
			it, _, ok := c.GetRange([]byte("ab"))
			if held := tc.want == WarmKept || tc.want == WarmHeld; ok != held || (ok && (!it.First() || string(it.Key()) != "ab1" || it.Next())) {
				t.Fatalf("range held %v, want %v with ab1 alone", ok, held)
			}
		})
	}
}

// otherBucket is a one-byte group prefix, other than g, in another bucket,
// of keys testPolicy treats as plain: not 'c' (a write of such a key
// resets the whole cache, which crosses every ticket) nor 'f' (a family).
// The buckets hash with the cache's random seed, so which letter comes
// first varies from run to run.
func otherBucket(c *Cache, g string) string {
	p := testPolicy()
	for b := byte('b'); b < 'z'; b++ {
		key := []byte{b, 'b', '1'}
		if p.Resets(key) || !p.Admit(key) {
			continue
		}
		if c.groupOf([]byte{b}) != c.groupOf([]byte(g)) {
			return string(b)
		}
	}
	panic("every group in one bucket")
}

// A warm-up takes spare room only, never evicting; and refuses a range
// the cache does not hold (too many entries, or not an equality prefix).
func TestWarmTakesSpareRoomOnly(t *testing.T) {
	c := warmCache(shardCount*1024, nil)
	var full bool
	skipped := 0
	for i := 0; i < 26*58 && !full; i++ {
		lo := string([]byte{byte('a' + i/58), byte('A' + i%58)})
		switch c.Warm(c.TakeWarmTicket([]byte(lo[:1])), []byte(lo), kvs(lo+"1", lo+"2")) {
		case WarmFull:
			full = true
		case WarmStale, WarmUnfit:
			t.Fatalf("range %s refused", lo)
		case WarmSkipped:
			skipped++
		}
	}
	if st := c.Stats(); !full || st.Evictions != 0 || st.Bytes > c.MaxBytes() {
		t.Fatalf("full %v, stats %+v: want the cache filled to its bound, nothing evicted", full, st)
	}
	if skipped == 0 {
		t.Fatal("no range was skipped for its full shard before the last shard filled")
	}
	// Full means every shard: none has room for one more such range.
	at, _ := c.rangeSlotOf([]byte("zz"), kvs("zz1", "zz2"))
	for i := range c.shards {
		if sh := &c.shards[i]; sh.hasRoom(at.n + itemOverhead) {
			t.Fatalf("the warm-up ended full with shard %d at %d of %d bytes", i, sh.bytes, sh.max)
		}
	}
	c = warmCache(1<<20, nil)
	many := kvs("ab1", "ab2", "ab3", "ab4", "ab5", "ab6", "ab7", "ab8", "ab9")
	if got := c.Warm(c.TakeWarmTicket([]byte("a")), []byte("ab"), many); got != WarmUnfit {
		t.Fatalf("a range of %d entries: %d, want WarmUnfit", len(many), got)
	}
	if got := c.Warm(c.TakeWarmTicket([]byte("a")), []byte("a"), kvs("ab1")); got != WarmUnfit {
		t.Fatalf("a range that is not an equality prefix: %d, want WarmUnfit", got)
	}
}

// One warm-up per bucket at a time; the next waits warmEvery, and twice
// as long after each that kept under an eighth of what it read (up to
// maxWarmGap); a cache without range groups warms nothing.
func TestBeginWarmIsPaced(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := warmCache(1<<20, clk)
	begin := func(lo string) bool {
		_, ok := c.BeginWarm([]byte(lo))
		return ok
	}
	if p, ok := c.BeginWarm([]byte("ab")); !ok || string(p) != "a" {
		t.Fatalf("first warm-up: %q %v, want group a", p, ok)
	}
	if begin("ac") {
		t.Fatal("a second warm-up of the bucket began while one ran")
	}
	if !begin(otherBucket(c, "a") + "b") {
		t.Fatal("another bucket's warm-up was refused")
	}
	waits := []struct {
		read, kept int
		wait       time.Duration
	}{
		{100, 100, warmEvery},
		{100, 12, 2 * warmEvery}, // under an eighth: the wait doubles
		{100, 0, 4 * warmEvery},
		{100, 0, 8 * warmEvery},
		{100, 0, 16 * warmEvery},
		{100, 0, maxWarmGap},
		{100, 13, warmEvery}, // one that paid: back to the usual wait
	}
	for i, w := range waits {
		c.EndWarm([]byte("a"), w.read, w.kept)
		clk.Advance(w.wait - time.Second)
		if begin("ab") {
			t.Fatalf("warm-up %d: the next began before %v", i, w.wait)
		}
		clk.Advance(time.Second)
		if !begin("ab") {
			t.Fatalf("warm-up %d: none after %v", i, w.wait)
		}
	}
	if st := c.Stats(); st.WarmUps != int64(len(waits)) {
		t.Fatalf("%d warm-ups counted, want %d", st.WarmUps, len(waits))
	}
	if _, ok := newTest(1<<20, clk).BeginWarm([]byte("ab")); ok {
		t.Fatal("a cache without range groups began a warm-up")
	}
}
