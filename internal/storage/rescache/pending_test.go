package rescache

import (
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// setPending makes key's value value, pending, through PendingSpan and
// SetPending as the engine calls them.
func setPending(t *testing.T, c *Cache, key, value string, logged bool) {
	t.Helper()
	lo, hi, ok, _ := c.PendingSpan([]byte(key), []byte(value), 16)
	if !ok || !c.SetPending([]byte(key), []byte(value), lo, hi, logged) {
		t.Fatalf("%s=%s not held back", key, value)
	}
}

// TestPendingSpan: a value is held back only over a plain value the
// cache holds, of the same length, changed within the bound; the span
// covers every byte changed since storage's value.
func TestPendingSpan(t *testing.T) {
	c := newTest(1<<20, nil)
	fill(c, "d1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	for _, tc := range []struct {
		key, value string
		ok         bool
		lo, hi     int
	}{
		{"d1", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", true, 5, 7},
		{"d1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, 0, 0},  // no change
		{"d1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, 0, 0},   // another length
		{"d1", "baaaaaaaaaaaaaaaaaaaaaaaaaaaab", false, 0, 0},  // 30 bytes apart
		{"d2", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", false, 0, 0},  // not held
		{"f1x", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", false, 0, 0}, // a family's
	} {
		lo, hi, ok, _ := c.PendingSpan([]byte(tc.key), []byte(tc.value), 16)
		if ok != tc.ok || (ok && (lo != tc.lo || hi != tc.hi)) {
			t.Errorf("PendingSpan(%s, %s) = %d, %d, %v; want %d, %d, %v", tc.key, tc.value, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	setPending(t, c, "d1", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", false)
	// A second touch elsewhere widens the span over both.
	lo, hi, ok, patched := c.PendingSpan([]byte("d1"), []byte("aaaaabbaaacaaaaaaaaaaaaaaaaaaa"), 16)
	if !ok || patched || lo != 5 || hi != 11 {
		t.Fatalf("widened span %d, %d, %v, %v; want 5, 11, true, false", lo, hi, ok, patched)
	}
	// SetPending refuses a span that no longer covers what changed.
	if c.SetPending([]byte("d1"), []byte("aaaaabbaaacaaaaaaaaaaaaaaaaaaa"), 10, 11, true) {
		t.Fatal("SetPending took a span narrower than the pending one")
	}
}

// TestPendingPatched: a pending value is patched once any change the
// cache held back of it was logged, until it settles, and EachPending
// says which are.
func TestPendingPatched(t *testing.T) {
	c := newTest(1<<20, nil)
	fill(c, "d1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	fill(c, "d2", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	setPending(t, c, "d1", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", false)
	setPending(t, c, "d2", "aaaaabbaaaaaaaaaaaaaaaaaaaaaaa", true)
	setPending(t, c, "d1", "aaaaabbaacaaaaaaaaaaaaaaaaaaaa", true)
	setPending(t, c, "d1", "aaaaabbaadaaaaaaaaaaaaaaaaaaaa", false)
	setPending(t, c, "d2", "aaaaabbaadaaaaaaaaaaaaaaaaaaaa", false)
	for _, key := range []string{"d1", "d2"} {
		if pending, patched := c.IsPending([]byte(key)); !pending || !patched {
			t.Errorf("%s: pending %v, patched %v; want both", key, pending, patched)
		}
	}
	seen := map[string]bool{}
	for n := range Shards {
		c.EachPending(n, func(key, _ []byte, patched bool) { seen[string(key)] = patched })
		c.SettlePending(n)
	}
	if len(seen) != 2 || !seen["d1"] || !seen["d2"] {
		t.Fatalf("EachPending saw %v", seen)
	}
	setPending(t, c, "d1", "aaaaabbaaeaaaaaaaaaaaaaaaaaaaa", false)
	if pending, patched := c.IsPending([]byte("d1")); !pending || patched {
		t.Fatalf("after a settle and an unlogged change: pending %v, patched %v", pending, patched)
	}
}

// TestPendingStays: a pending value outlives every way the cache drops
// values on its own (eviction, expiry, Reset) and refuses fills; a
// write of its key, Clear, InvalidateRange and SettlePending end it.
func TestPendingStays(t *testing.T) {
	for _, end := range []string{"write", "delete", "clear", "invalidateRange", "settle"} {
		t.Run(end, func(t *testing.T) {
			clk := clock.NewManual(time.Unix(1000, 0))
			c := newTest(8<<10, clk) // 512 bytes a shard: three entries at most
			expiring := fmt.Sprintf("exp:%d", clk.Now().Add(time.Second).UnixNano())
			fill(c, "d1", expiring)
			setPending(t, c, "d1", expiring[:len(expiring)-1]+"9", true)
			want := expiring[:len(expiring)-1] + "9"
			for i := range 200 { // fills that would evict d1 were it not pending
				fill(c, fmt.Sprintf("x%03d", i), "value")
			}
			clk.Advance(time.Hour) // d1 has expired
			c.Sweep()
			c.Reset()
			_, tk, _ := c.Get([]byte("nothing"))
			c.Fill([]byte("d1"), []byte("older"), tk)
			if v, _, ok := c.Get([]byte("d1")); !ok || string(v) != want {
				t.Fatalf("pending value read %q, %v; want %q", v, ok, want)
			}
			if c.Stats().PendingItems != 1 || c.Stats().PendingBytes <= 0 {
				t.Fatalf("stats %+v", c.Stats())
			}
			switch end {
			case "write":
				c.Invalidate([]byte("d1"))
				c.Written([]byte("d1"), []byte("new"), KeepHeld)
			case "delete":
				c.Invalidate([]byte("d1"))
				c.Written([]byte("d1"), nil, KeepNone)
			case "clear":
				c.Clear()
			case "invalidateRange":
				c.InvalidateRange([]byte("d"), []byte("e"))
			case "settle":
				for n := range Shards {
					c.SettlePending(n)
				}
			}
			if st := c.Stats(); st.PendingItems != 0 || st.PendingBytes != 0 {
				t.Fatalf("after %s: %d pending, %d bytes", end, st.PendingItems, st.PendingBytes)
			}
			if p, _ := c.IsPending([]byte("d1")); p || !filterEmpty(c) {
				t.Fatalf("after %s: IsPending %v, filter empty %v", end, p, filterEmpty(c))
			}
			v, _, ok := c.Get([]byte("d1"))
			if end == "write" && (!ok || string(v) != "new") {
				t.Fatalf("after the write: %q, %v", v, ok)
			}
			if end != "write" && ok {
				t.Fatalf("after %s: still served %q (expired or gone)", end, v)
			}
		})
	}
}

// filterEmpty reports whether c's pending filter marks and counts
// nothing.
func filterEmpty(c *Cache) bool {
	f := c.pendingFilterOf()
	for i := range f.words {
		if f.words[i].Load() != 0 {
			return false
		}
	}
	for i := range f.groups {
		if f.groups[i].Load() != 0 {
			return false
		}
	}
	return true
}

// TestPendingGroups: with groups of two bytes, a key in a group holding
// no pending value is answered by its group's count alone, whatever the
// bits say (every key on one bit here); its group's count follows the
// pending values in and out.
func TestPendingGroups(t *testing.T) {
	p := testPolicy()
	p.PendingGroupLen = 2
	c := New(1<<24, nil)
	c.SetPolicy(p)
	c.testHash = func([]byte) uint64 { return 7 }
	for _, k := range []string{"da1", "da2", "db1"} {
		fill(c, k, "aaaaaaaa")
	}
	setPending(t, c, "da1", "aaaaaaab", false)
	f := c.pendingFilterOf()
	if !f.groupMaybe([]byte("da1")) || !f.groupMaybe([]byte("da2")) {
		t.Fatal("the group of da1 counts no pending value")
	}
	// db1's group is another bucket unless the seeded hash joins them.
	if f.group([]byte("db1")) != f.group([]byte("da1")) && f.groupMaybe([]byte("db1")) {
		t.Fatal("the group of db1 counts a pending value")
	}
	if p, _ := c.IsPending([]byte("da1")); !p {
		t.Fatal("da1 not pending")
	}
	if p, _ := c.IsPending([]byte("db1")); p {
		t.Fatal("db1 pending")
	}
	c.Invalidate([]byte("da1"))
	c.Written([]byte("da1"), []byte("aaaaaaac"), KeepHeld)
	if f.groupMaybe([]byte("da1")) || !filterEmpty(c) {
		t.Fatalf("after the write: group count %d, filter empty %v", f.group([]byte("da1")).Load(), filterEmpty(c))
	}
}

// TestIsPendingAgreesWithTheFilter: IsPending answers as the slots say
// for values pending, ended by a write, settled and never pending, with
// the real hash and with every key on one bit, where the lookup alone
// tells them apart; a shard's bits are cleared with its last pending
// value, however it ends.
func TestIsPendingAgreesWithTheFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func([]byte) uint64
	}{{"seeded hash", nil}, {"one bit", func([]byte) uint64 { return 7 }}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTest(1<<24, nil)
			c.testHash = tc.hash
			const n = 512
			key := func(i int) []byte { return []byte(fmt.Sprintf("d%04d", i)) }
			for i := range n {
				fill(c, string(key(i)), "aaaaaaaa")
				if i%2 == 0 {
					setPending(t, c, string(key(i)), "aaaaaaab", false)
				}
			}
			check := func(when string, want func(i int) bool) {
				t.Helper()
				for i := range n {
					if p, _ := c.IsPending(key(i)); p != want(i) {
						t.Fatalf("%s: IsPending(%s) = %v", when, key(i), p)
					}
				}
			}
			check("half pending", func(i int) bool { return i%2 == 0 })
			// A write ends key 0's pending state; its bit stays while
			// its shard holds other pending values.
			c.Invalidate(key(0))
			c.Written(key(0), []byte("aaaaaaac"), KeepHeld)
			check("one written", func(i int) bool { return i%2 == 0 && i != 0 })
			if filterEmpty(c) {
				t.Fatal("filter empty with values pending")
			}
			for sh := range Shards {
				c.SettlePending(sh)
			}
			check("settled", func(int) bool { return false })
			if !filterEmpty(c) {
				t.Fatal("filter not empty after every value settled")
			}
			setPending(t, c, string(key(1)), "aaaaaaac", false)
			check("one pending again", func(i int) bool { return i == 1 })
			c.Invalidate(key(1))
			c.Written(key(1), nil, KeepNone)
			check("deleted", func(int) bool { return false })
			if !filterEmpty(c) {
				t.Fatal("filter not empty after the last pending value was deleted")
			}
		})
	}
}
