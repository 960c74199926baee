package docstore

import "bytes"

// rangeList holds the key ranges an index scan has not opened yet, for a
// cursor that goes on with it, in about a third of the space of the keys
// themselves: the prefix every key shares (the index's, often more) is
// kept once, and a point range (hi is prefixEnd(lo): each value of an
// $in) keeps only its lo.
type rangeList struct {
	prefix []byte
	keys   *keyList // per range: lo after the prefix, then hi after it ("" for a point)
	points []uint64 // bit i: range i is a point
}

func packRanges(ranges []keyRange) *rangeList {
	l := &rangeList{prefix: commonPrefix(ranges), points: make([]uint64, (len(ranges)+63)/64)}
	keys := make([][]byte, 0, 2*len(ranges))
	for i, r := range ranges {
		if bytes.Equal(r.hi, prefixEnd(r.lo)) {
			l.points[i/64] |= 1 << (i % 64)
			keys = append(keys, r.lo[len(l.prefix):], nil)
			continue
		}
		keys = append(keys, r.lo[len(l.prefix):], r.hi[len(l.prefix):])
	}
	l.keys = packKeys(keys)
	return l
}

// commonPrefix is the longest prefix of every range's ends.
func commonPrefix(ranges []keyRange) []byte {
	if len(ranges) == 0 {
		return nil
	}
	p := ranges[0].lo
	for _, r := range ranges {
		p = p[:sharedLen(p, r.lo)]
		p = p[:sharedLen(p, r.hi)]
	}
	return append([]byte(nil), p...)
}

func sharedLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (l *rangeList) len() int { return len(l.keys.ends) / 2 }

// at rebuilds range i.
func (l *rangeList) at(i int) keyRange {
	lo := append(append(make([]byte, 0, len(l.prefix)+len(l.keys.key(2*i))), l.prefix...), l.keys.key(2*i)...)
	if l.points[i/64]&(1<<(i%64)) != 0 {
		return keyRange{lo: lo, hi: prefixEnd(lo)}
	}
	hi := l.keys.key(2*i + 1)
	if len(hi) == 0 {
		// Only an unbounded end packs to nothing: a bounded hi is above lo,
		// which has the prefix, so it has more than the prefix.
		return keyRange{lo: lo}
	}
	return keyRange{lo: lo, hi: append(append(make([]byte, 0, len(l.prefix)+len(hi)), l.prefix...), hi...)}
}
