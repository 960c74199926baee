package rescache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// filteredCache is warmCache with a complete filter of group "a" holding
// the values "a0" … "a9".
func filteredCache(t *testing.T) *Cache {
	t.Helper()
	c := warmCache(1<<20, nil)
	if !c.BeginFilter([]byte("a"), 10) {
		t.Fatal("BeginFilter refused an empty bucket")
	}
	for i := range 10 {
		c.FilterAdd(fmt.Appendf(nil, "a%d", i))
	}
	c.EndFilter([]byte("a"), true)
	return c
}

// holds reports whether the range at lo is held with exactly keys.
func holds(c *Cache, lo string, keys ...string) bool {
	it, _, ok := c.GetRange([]byte(lo))
	if !ok {
		return false
	}
	for i, valid := 0, it.First(); ; i, valid = i+1, it.Next() {
		if !valid {
			return i == len(keys)
		}
		if i == len(keys) || string(it.Key()) != keys[i] {
			return false
		}
	}
}

// A filter answers for the values it never saw, only once complete, and
// only for its own group.
func TestFilterKnowsOnlyWhatItNeverSaw(t *testing.T) {
	c := warmCache(1<<20, nil)
	c.BeginFilter([]byte("a"), 10)
	c.FilterAdd([]byte("a1"))
	if c.KnownEmpty([]byte("ab")) {
		t.Fatal("a filter being made answered")
	}
	c.EndFilter([]byte("a"), true)
	for _, tc := range []struct {
		lo    string
		empty bool
	}{{"ab", true}, {"a1", false}, {otherBucket(c, "a") + "b", false}} {
		if got := c.KnownEmpty([]byte(tc.lo)); got != tc.empty {
			t.Errorf("KnownEmpty(%q) = %v, want %v", tc.lo, got, tc.empty)
		}
	}
	if st := c.Stats(); st.FilterBytes <= 0 {
		t.Fatalf("FilterBytes = %d", st.FilterBytes)
	}
	c.EndFilter([]byte("a"), false) // a complete filter stays: it is not being made
	if !c.HasFilter([]byte("a")) {
		t.Fatal("EndFilter(false) dropped a complete filter")
	}
}

// A filter whose scan did not end is dropped; so is a filter whose group
// a range deletion meets (whatever part of it), every filter after a
// reset, and one past its capacity.
func TestFilterDropped(t *testing.T) {
	rangeDrop := func(start, end string) func(c *Cache) {
		return func(c *Cache) {
			c.EndFilter([]byte("a"), true)
			c.InvalidateRange(bound(start), bound(end))
		}
	}
	for _, tc := range []struct {
		name string
		drop func(c *Cache)
	}{
		{"scan failed", func(c *Cache) { c.EndFilter([]byte("a"), false) }},
		{"InvalidateRange over the group", rangeDrop("", "b")},
		{"InvalidateRange inside the group", rangeDrop("ab", "ac")},
		{"InvalidateRange from inside the group, unbounded", rangeDrop("a\xff", "-")},
		{"InvalidateRange up to the group's first keys", rangeDrop("0", "a\x00")},
		{"InvalidateRange of everything", rangeDrop("-", "-")},
		{"Reset", func(c *Cache) { c.EndFilter([]byte("a"), true); c.Reset() }},
		{"capacity", func(c *Cache) {
			c.EndFilter([]byte("a"), true)
			for i := range 1 << 20 { // far past any capacity: every new value takes room
				if !c.HasFilter([]byte("a")) {
					return
				}
				_, cl := c.InvalidateSet(fmt.Appendf(nil, "a%x:1", i))
				c.WrittenClaimed(fmt.Appendf(nil, "a%x:1", i), nil, KeepSpare, cl)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := warmCache(1<<20, nil)
			c.BeginFilter([]byte("a"), 1)
			tc.drop(c)
			if c.HasFilter([]byte("a")) || c.KnownEmpty([]byte("ab")) || c.Stats().FilterBytes != 0 {
				t.Fatal("the filter stayed")
			}
			if !c.BeginFilter([]byte("a"), 1) {
				t.Fatal("no new filter could be made")
			}
		})
	}
}

// bound is a range bound of a test row: "-" for none (nil).
func bound(s string) []byte {
	if s == "-" {
		return nil
	}
	return []byte(s)
}

// A range deletion that meets no key of a filter's group leaves the
// filter complete: it adds no key, and the filter forgets nothing. (A
// replica set member's raft log compactions are range deletions of keys
// that are no index's.)
func TestFilterOutlivesRangeDeletionOutsideItsGroup(t *testing.T) {
	for _, rg := range [][2]string{{"x", "y"}, {"b", "c"}, {"0", "a"}, {"-", "a"}, {"b", "-"}} {
		c := warmCache(1<<20, nil)
		c.BeginFilter([]byte("a"), 1)
		c.EndFilter([]byte("a"), true)
		c.InvalidateRange(bound(rg[0]), bound(rg[1]))
		if !c.HasFilter([]byte("a")) || !c.KnownEmpty([]byte("ab")) {
			t.Errorf("a range deletion of [%q, %q) dropped the filter of group \"a\"", rg[0], rg[1])
		}
	}
}

// prefixMeets never says no to a range that holds a key of the prefix:
// every key of up to two bytes past a random prefix, over an alphabet
// with the bytes at both ends, checked against random bounds.
func TestPrefixMeetsEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	randKey := func(maxLen int) []byte {
		k := make([]byte, rng.IntN(maxLen+1))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	var keysOf func(prefix []byte, more int) [][]byte
	keysOf = func(prefix []byte, more int) [][]byte {
		out := [][]byte{prefix}
		if more == 0 {
			return out
		}
		for _, b := range alphabet {
			out = append(out, keysOf(append(bytes.Clone(prefix), b), more-1)...)
		}
		return out
	}
	for range 20_000 {
		prefix, start, end := randKey(2), randKey(4), randKey(4)
		if rng.IntN(5) == 0 {
			start = nil
		}
		if rng.IntN(5) == 0 {
			end = nil
		}
		if prefixMeets(prefix, start, end) {
			continue
		}
		for _, k := range keysOf(prefix, 2) {
			if (start == nil || bytes.Compare(k, start) >= 0) && (end == nil || bytes.Compare(k, end) < 0) {
				t.Fatalf("key %q of prefix %q lies in [%q, %q) but prefixMeets says no", k, prefix, start, end)
			}
		}
	}
}

// A write that sets the first entry of a value the filter never saw
// installs the value's range as holding that entry alone, unless anything
// could have made that wrong: another write setting an entry in the group
// under way, another write reaching the range after the claim, the value
// seen before, a filter not complete, a failed write. Every row ends with
// the group's count of writes under way back at zero.
func TestClaimInstallsOnlyWhatIsAlone(t *testing.T) {
	key, val := []byte("ab1"), []byte("v")
	for _, tc := range []struct {
		name    string
		before  func(c *Cache) func() // runs before the claim; returns what runs after the write
		between func(c *Cache) func() // runs between the claim and the write's end; returns what runs after it
		keep    Keep
		want    bool
	}{
		{name: "alone", keep: KeepSpare, want: true},
		{name: "write failed", keep: KeepNone},
		{name: "value seen", before: func(c *Cache) func() { c.FilterAdd([]byte("ab")); return nil }, keep: KeepSpare},
		{name: "filter not complete", before: func(c *Cache) func() {
			c.Reset()
			c.BeginFilter([]byte("a"), 10)
			return nil
		}, keep: KeepSpare},
		{name: "another set under way in the group", before: func(c *Cache) func() {
			k := []byte("az1")
			_, cl := c.InvalidateSet(k)
			return func() { c.WrittenClaimed(k, val, KeepSpare, cl) }
		}, keep: KeepSpare},
		{name: "same value set after the claim", between: func(c *Cache) func() {
			k := []byte("ab2")
			_, cl := c.InvalidateSet(k)
			c.WrittenClaimed(k, val, KeepSpare, cl)
			return nil
		}, keep: KeepSpare},
		{name: "entry of the range deleted after the claim", between: func(c *Cache) func() {
			c.Invalidate([]byte("ab0"))
			return nil
		}, keep: KeepSpare},
		{name: "read filled the range after the claim", between: func(c *Cache) func() {
			_, tk, _ := c.GetRange([]byte("ab"))
			c.FillRange([]byte("ab"), []byte("ac"), nil, tk)
			return nil
		}, keep: KeepSpare, want: true},
		{name: "read of storage before the apply fills after the install", between: func(c *Cache) func() {
			_, tk, _ := c.GetRange([]byte("ab"))
			return func() { c.FillRange([]byte("ab"), []byte("ac"), nil, tk) }
		}, keep: KeepSpare, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := filteredCache(t)
			var after func()
			if tc.before != nil {
				after = tc.before(c)
			}
			_, cl := c.InvalidateSet(key)
			if !cl.Counted() {
				t.Fatal("a set in a filtered group was not counted")
			}
			var afterWrite func()
			if tc.between != nil {
				afterWrite = tc.between(c)
			}
			c.WrittenClaimed(key, val, tc.keep, cl)
			for _, f := range []func(){after, afterWrite} {
				if f != nil {
					f()
				}
			}
			if got := holds(c, "ab", "ab1"); got != tc.want {
				t.Fatalf("range ab held with ab1 alone: %v, want %v", got, tc.want)
			}
			if n := c.groups[c.groupOf([]byte("a"))].setting.Load(); n != 0 {
				t.Fatalf("%d writes still counted under way", n)
			}
			if !tc.want && tc.between == nil && c.KnownEmpty([]byte("ab")) {
				t.Fatal("the filter forgot a value set")
			}
		})
	}
}

// A write into a group without a filter, or of a key in no range, is not
// counted and claims nothing.
func TestClaimNeedsAFilter(t *testing.T) {
	c := filteredCache(t)
	other := otherBucket(c, "a")
	for _, key := range []string{other + "b1", "f"} {
		if _, cl := c.InvalidateSet([]byte(key)); cl.Counted() {
			t.Fatalf("write of %q counted", key)
		}
	}
}
