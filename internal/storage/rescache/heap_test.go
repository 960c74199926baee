package rescache

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// The expiry heap keeps its order and every slot's place through random
// pushes, removals at any place and expiries moved either way, each
// place's expiry is never after its slot's, and each slot holds its
// place's expiry (heapBound).
func TestExpiryHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sh shard
	sh.init(1 << 30)
	var live []int32
	for step := range 20000 {
		if len(live) > 0 && rng.IntN(4) == 0 {
			sh.setExpiry(live[rng.IntN(len(live))], int64(rng.IntN(1000))+1)
		} else if len(live) == 0 || rng.IntN(3) > 0 {
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
		if got := sh.at(p.slot); got.heapIdx != int32(pos) || got.expiry < p.expiry || got.heapBound != p.expiry {
			t.Fatalf("step %d: place %d holds slot %d (expiry %d), whose place is %d (expiry %d, bound %d)", step, pos, p.slot, p.expiry, got.heapIdx, got.expiry, got.heapBound)
		}
		if pos > 0 && h.at[(pos-1)/heapArity].expiry > p.expiry {
			t.Fatalf("step %d: place %d expires before its parent", step, pos)
		}
	}
}

// A value written again with a later expiry (a touch) stays past its old
// expiry and leaves at its new one; one written with an earlier expiry
// leaves at that; a sweep evicts exactly the values expired by then.
func TestSweepFollowsRewrittenExpiries(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := newTest(1<<20, clk)
	at := func(d time.Duration) string { return fmt.Sprintf("exp:%d", clk.Now().Add(d).UnixNano()) }
	for i := range 100 {
		fill(c, fmt.Sprintf("d%02d", i), at(time.Duration(i+1)*time.Second))
	}
	rewrite := func(key, value string) {
		c.Invalidate([]byte(key))
		c.Written([]byte(key), []byte(value), KeepHeld)
	}
	rewrite("d00", at(200*time.Second)) // from 1 s to 200 s
	rewrite("d99", at(500*time.Millisecond))
	rewrite("d50", at(150*time.Second))
	clk.Advance(time.Second)
	c.Sweep()
	if st := c.Stats(); st.Items != 99 || st.ExpiredEvictions != 1 {
		t.Fatalf("at 1 s: %+v, want only d99 gone", st)
	}
	if _, _, ok := c.Get([]byte("d00")); !ok {
		t.Fatal("a value moved later left at its old expiry")
	}
	clk.Advance(99 * time.Second)
	c.Sweep()
	if st := c.Stats(); st.Items != 2 {
		t.Fatalf("at 100 s: %d values left, want the two moved later", st.Items)
	}
	clk.Advance(50 * time.Second)
	c.Sweep()
	if _, _, ok := c.Get([]byte("d50")); ok || c.Stats().Items != 1 {
		t.Fatalf("at 150 s: d50 still held or %d values left, want 1", c.Stats().Items)
	}
	clk.Advance(50 * time.Second)
	c.Sweep()
	if c.Stats().Items != 0 {
		t.Fatal("at 200 s: a value outlived its expiry")
	}
}
