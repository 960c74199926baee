package rescache

// heads is the set of first bytes of the keys a shard has held since it
// was last empty (a range's lower bound, a family member's own key), so
// that a range deletion no held key can fall in skips the walk of its
// slots. The raft log's compaction deletes a range of its own tag every
// few thousand entries, and a follower's replaced tail is one too; the
// cache never holds such a key, and walking every slot for it took 27.6
// ms beside 1,000,000 held values (docs/design/0002, "Measured").
//
// A key k (or a range at lo) meets [start, end) only when its first byte
// lies between start's and end's: start <= k implies start[0] <= k[0],
// and k < end implies k[0] <= end[0]; a range at lo meets when start
// sorts before lo or starts with it, and lo sorts before end, which bound
// lo[0] the same way. A range at the empty key holds every key (whole).
type heads struct {
	bits  [4]uint64
	whole bool
}

func (h *heads) add(key []byte) {
	if len(key) == 0 {
		h.whole = true
		return
	}
	h.bits[key[0]/64] |= 1 << (key[0] % 64)
}

// mayMeet reports whether a key of the set may lie in [start, end) (end
// nil: no upper bound).
func (h *heads) mayMeet(start, end []byte) bool {
	if h.whole {
		return true
	}
	lo, hi := 0, 255
	if len(start) > 0 {
		lo = int(start[0])
	}
	if end != nil {
		if len(end) == 0 {
			return false
		}
		hi = int(end[0])
	}
	for b := lo; b <= hi; b++ {
		if w := h.bits[b/64] >> (b % 64); w == 0 {
			b |= 63 // none from b to the word's end
		} else if w&1 != 0 {
			return true
		}
	}
	return false
}
