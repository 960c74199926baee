package rescache

import (
	"math/rand/v2"
	"testing"
)

// TestSlotIndexAgainstAModel adds and removes slots under hashes whose
// tags collide often and whose homes crowd the table's end (so probes and
// the deletion's moves wrap around), and checks that every slot indexed is found and
// that the cells hold no other.
func TestSlotIndexAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var x slotIndex
	held := map[int32]uint64{} // slot -> its hash
	hashOf := func() uint64 {
		tag := uint64(rng.IntN(40)) + 1<<20 - 20 // near the end of any table size
		return tag<<32 | uint64(rng.Uint32())
	}
	next := int32(1)
	for step := range 20_000 {
		if len(held) > 0 && rng.IntN(5) < 2 {
			for slot, hash := range held {
				x.remove(hash, slot)
				delete(held, slot)
				break
			}
		} else {
			held[next] = hashOf()
			x.add(held[next], next)
			next++
		}
		if x.count != len(held) || 4*x.count > 3*len(x.cells) {
			t.Fatalf("step %d: count %d of %d cells, model holds %d", step, x.count, len(x.cells), len(held))
		}
		if step%50 != 0 {
			continue
		}
		for slot, hash := range held {
			if got := x.probe(hash, func(i int32) bool { return i == slot }); got != slot {
				t.Fatalf("step %d: slot %d not found (got %d)", step, slot, got)
			}
		}
		for _, c := range x.cells {
			if hash, ok := held[cellSlot(c)]; c != 0 && (!ok || cellOf(hash, cellSlot(c)) != c) {
				t.Fatalf("step %d: a cell holds slot %d, not indexed", step, cellSlot(c))
			}
		}
	}
}
