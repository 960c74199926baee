package rescache

import (
	"math/rand/v2"
	"testing"
)

// TestSlotIndexAgainstAModel adds, moves and removes slots under hashes
// whose tags collide often and whose homes crowd the table's end (so
// probes and the deletion's moves wrap around), and checks that every slot
// indexed is found with the place its data was last given, and that the
// cells hold no other.
func TestSlotIndexAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var x slotIndex
	held := map[int32]uint64{} // slot -> its hash
	locs := map[int32]place{}  // slot -> its data's place
	hashOf := func() uint64 {
		tag := uint64(rng.IntN(40)) + 1<<20 - 20 // near the end of any table size
		return tag<<32 | uint64(rng.Uint32())
	}
	next := int32(1)
	for step := range 20_000 {
		switch op := rng.IntN(5); {
		case len(held) > 0 && op < 2:
			for slot, hash := range held {
				x.remove(hash, slot)
				delete(held, slot)
				delete(locs, slot)
				break
			}
		case len(held) > 0 && op == 2:
			for slot, hash := range held {
				locs[slot] = place{page: int32(step), off: slot}
				x.moved(hash, slot, locs[slot])
				break
			}
		default:
			held[next], locs[next] = hashOf(), place{page: next, off: -next}
			x.add(held[next], next, locs[next])
			next++
		}
		if x.count != len(held) || 4*x.count > 3*len(x.cells) {
			t.Fatalf("step %d: count %d of %d cells, model holds %d", step, x.count, len(x.cells), len(held))
		}
		if step%50 != 0 {
			continue
		}
		for slot, hash := range held {
			var loc place
			if got := x.probe(hash, func(i int32, at place) bool { loc = at; return i == slot }); got != slot || loc != locs[slot] {
				t.Fatalf("step %d: slot %d not found at %v (got %d at %v)", step, slot, locs[slot], got, loc)
			}
		}
		for _, c := range x.cells {
			if hash, ok := held[wordSlot(c.word)]; !c.empty() && (!ok || wordOf(hash, wordSlot(c.word)) != c.word) {
				t.Fatalf("step %d: a cell holds slot %d, not indexed", step, wordSlot(c.word))
			}
		}
	}
}
