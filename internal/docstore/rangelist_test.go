package docstore

import (
	"bytes"
	"testing"
)

// TestRangeListRoundTrip: packed ranges come back as they went in, points
// and two-sided ranges, with a shared prefix or none, and an unbounded end.
func TestRangeListRoundTrip(t *testing.T) {
	p := indexPrefix(7, 3)
	point := func(v byte) keyRange {
		lo := append(append([]byte(nil), p...), 0x10, v)
		return keyRange{lo: lo, hi: prefixEnd(lo)}
	}
	span := keyRange{lo: append(append([]byte(nil), p...), 0x20), hi: append(append([]byte(nil), p...), 0x30, 1)}
	for name, rs := range map[string][]keyRange{
		"points":    {point(1), point(2), point(200)},
		"mixed":     {point(1), span, point(9)},
		"whole":     {{lo: p, hi: prefixEnd(p)}},
		"unbounded": {point(1), {lo: span.lo}},
		"none":      nil,
	} {
		l := packRanges(rs)
		if l.len() != len(rs) {
			t.Fatalf("%s: %d ranges packed, want %d", name, l.len(), len(rs))
		}
		for i, want := range rs {
			got := l.at(i)
			if !bytes.Equal(got.lo, want.lo) || !bytes.Equal(got.hi, want.hi) || (got.hi == nil) != (want.hi == nil) {
				t.Errorf("%s: range %d = [%x, %x), want [%x, %x)", name, i, got.lo, got.hi, want.lo, want.hi)
			}
		}
	}
}
