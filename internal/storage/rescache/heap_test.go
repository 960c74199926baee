package rescache

import (
	"math/rand/v2"
	"testing"
)

// The expiry heap keeps its order and every slot's place through random
// pushes and removals at any place, and its first is always the earliest.
func TestExpiryHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sh shard
	sh.init(1 << 30)
	var live []int32
	for step := range 20000 {
		if len(live) == 0 || rng.IntN(3) > 0 {
			i := sh.alloc()
			s := sh.at(i)
			s.used, s.expiry = true, int64(rng.IntN(1000))+1
			sh.expiry.push(i)
			live = append(live, i)
		} else {
			k := rng.IntN(len(live))
			i := live[k]
			sh.expiry.remove(int(sh.at(i).heapIdx))
			if sh.at(i).heapIdx != -1 {
				t.Fatalf("step %d: a removed slot still has a place", step)
			}
			*sh.at(i) = slot{}
			sh.free = append(sh.free, i)
			live = append(live[:k], live[k+1:]...)
		}
		checkHeap(t, step, &sh, live)
	}
}

func checkHeap(t *testing.T, step int, sh *shard, live []int32) {
	t.Helper()
	h := &sh.expiry
	if len(h.at) != len(live) {
		t.Fatalf("step %d: %d places for %d slots", step, len(h.at), len(live))
	}
	for pos, p := range h.at {
		if got := sh.at(p.slot); got.heapIdx != int32(pos) || got.expiry != p.expiry {
			t.Fatalf("step %d: place %d holds slot %d (expiry %d), whose place is %d (expiry %d)", step, pos, p.slot, p.expiry, got.heapIdx, got.expiry)
		}
		if pos > 0 && h.at[(pos-1)/heapArity].expiry > p.expiry {
			t.Fatalf("step %d: place %d expires before its parent", step, pos)
		}
	}
}
