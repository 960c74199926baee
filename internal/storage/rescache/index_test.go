package rescache

import (
	"math/rand/v2"
	"testing"
)

// TestSlotIndexAgainstAModel adds, moves and removes slots under hashes
// whose tags collide often and whose homes crowd the table's end (so
// probes and the deletion's moves wrap around), and checks that every slot
// indexed is found with the place its data was last given, that the
// cells hold no other, and that the tag counts agree with the cells.
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
		checkTagCounts(t, &x)
	}
}

// checkTagCounts fails unless each bucket of x's tag counts holds the
// number of its cells, or has saturated.
func checkTagCounts(t *testing.T, x *slotIndex) {
	t.Helper()
	if len(x.tagCounts) != tagBucketsPerCell*len(x.cells) {
		t.Fatalf("%d tag buckets for %d cells", len(x.tagCounts), len(x.cells))
	}
	want := make([]int, len(x.tagCounts))
	for _, c := range x.cells {
		if !c.empty() {
			want[x.tagBucket(wordTag(c.word))]++
		}
	}
	for b, n := range x.tagCounts {
		if n != 255 && int(n) != want[b] {
			t.Fatalf("tag bucket %d counts %d, its cells %d", b, n, want[b])
		}
	}
}

// TestTagCountsSaturate: a bucket of more cells than its count can hold
// still answers that its tags may be indexed, and after removals too.
func TestTagCountsSaturate(t *testing.T) {
	var x slotIndex
	const tag = uint64(7)
	for slot := range int32(600) {
		x.add(tag<<32|uint64(slot), slot+1, place{page: slot})
	}
	for slot := range int32(600) {
		hash := tag<<32 | uint64(slot)
		if slot%2 == 0 {
			x.remove(hash, slot+1)
		}
	}
	for slot := range int32(600) {
		want := int32(noSlot)
		if slot%2 == 1 {
			want = slot + 1
		}
		if got := x.probe(tag<<32|uint64(slot), func(i int32, _ place) bool { return i == slot+1 }); got != want {
			t.Fatalf("slot %d: probe found %d, want %d", slot+1, got, want)
		}
	}
	checkTagCounts(t, &x)
}
