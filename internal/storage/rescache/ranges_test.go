package rescache

import (
	"bytes"
	"testing"
)

// A range's entries come back from the cache as they went in, whatever
// their values (the key's suffix, empty, other bytes, a suffix of the
// suffix); the lower bound and a value that is the key's suffix are held
// once; entries whose keys do not start with the lower bound are never
// held.
func TestRangeEntriesRoundTrip(t *testing.T) {
	lo := []byte("ab")
	for name, entries := range map[string][]KV{
		"token":            {{Key: []byte("ab-id1"), Value: []byte("-id1")}},
		"empty value":      {{Key: []byte("ab1"), Value: nil}},
		"other value":      {{Key: []byte("ab1"), Value: []byte("record")}},
		"value ends key":   {{Key: []byte("ab123"), Value: []byte("23")}},
		"key is the bound": {{Key: []byte("ab"), Value: []byte("v")}},
		"several":          {{Key: []byte("ab1"), Value: []byte("1")}, {Key: []byte("ab2"), Value: []byte("x")}, {Key: []byte("ab3")}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newTest(1<<20, nil)
			_, ticket, _ := c.GetRange(lo)
			c.FillRange(lo, []byte("ac"), entries, ticket)
			it, _, ok := c.GetRange(lo)
			if !ok {
				t.Fatal("range not held")
			}
			i := 0
			for valid := it.First(); valid; valid = it.Next() {
				if i >= len(entries) || !bytes.Equal(it.Key(), entries[i].Key) || !bytes.Equal(it.Value(), entries[i].Value) {
					t.Fatalf("entry %d: %q=%q, want %v", i, it.Key(), it.Value(), entries)
				}
				i++
			}
			if i != len(entries) {
				t.Fatalf("%d entries, want %d", i, len(entries))
			}
		})
	}
	token := []KV{{Key: []byte("ab-id1"), Value: []byte("-id1")}}
	if n, whole := rangeLen(lo, token), len(lo)+len(token[0].Key)+len(token[0].Value); n > len(lo)+len("-id1")+rangeEntryOverhead || n >= whole {
		t.Fatalf("a token's range takes %d bytes, %d with its keys and values whole", n, whole)
	}
	c := warmCache(1<<20, nil)
	stray := []KV{{Key: []byte("ax1")}}
	_, ticket, _ := c.GetRange(lo)
	c.FillRange(lo, []byte("ac"), stray, ticket)
	c.InstallRange(lo, stray)
	if _, _, ok := c.GetRange(lo); ok {
		t.Fatal("a range holding a key outside it was kept")
	}
	if got := c.Warm(c.TakeWarmTicket(lo), lo, stray); got != WarmUnfit {
		t.Fatalf("Warm of a key outside its range: %d, want WarmUnfit", got)
	}
}
