package keyspace

import (
	"bytes"
	"testing"
)

// TestTagsAreDistinct: no two owners share a tag, the list is in byte
// order, and every tag names its owner.
func TestTagsAreDistinct(t *testing.T) {
	seen := map[Tag]string{}
	var prev Tag
	for i, e := range All() {
		if owner, dup := seen[e.Tag]; dup {
			t.Errorf("tag %q is both %s's and %s's", e.Tag, owner, e.Owner)
		}
		seen[e.Tag] = e.Owner
		if i > 0 && e.Tag <= prev {
			t.Errorf("tag %q is listed after %q", e.Tag, prev)
		}
		if e.Owner == "" || e.Name == "" {
			t.Errorf("tag %q has no owner or name", e.Tag)
		}
		prev = e.Tag
	}
	if len(seen) != 11 {
		t.Errorf("%d tags declared; a new tag needs a row in All", len(seen))
	}
}

// TestCatalogWithin: a range reaches the catalog exactly when it covers a
// tag that defines collections.
func TestCatalogWithin(t *testing.T) {
	for lo := 0; lo < 256; lo++ {
		for hi := lo; hi < 256; hi++ {
			want := false
			for _, e := range All() {
				want = want || e.Tag.DefinesCatalog() && lo <= int(e.Tag) && int(e.Tag) <= hi
			}
			if got := CatalogWithin(byte(lo), byte(hi)); got != want {
				t.Fatalf("CatalogWithin(%d, %d) = %v", lo, hi, got)
			}
		}
	}
}

// TestAppendPrefixEnd: the end appended after dst's bytes, in dst's room
// when it has some, and nil where PrefixEnd is nil.
func TestAppendPrefixEnd(t *testing.T) {
	for _, c := range []struct{ p, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
	} {
		if got := PrefixEnd(c.p); !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", c.p, got, c.want)
		}
		buf := make([]byte, 1, 8)
		got := AppendPrefixEnd(buf[1:1], c.p)
		if !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("AppendPrefixEnd(%x) = %x, want %x", c.p, got, c.want)
		}
		if got != nil && &got[0] != &buf[:2][1] {
			t.Errorf("AppendPrefixEnd(%x) did not use dst's room", c.p)
		}
	}
}
