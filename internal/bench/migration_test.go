package bench

import (
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Every layout the phase splits the sessions into tiles the hashed
// token's range with chunks of one width, parted between the two shards
// at 0, where shardCollection parts them.
func TestSessionChunkBoundsTileTheHashRange(t *testing.T) {
	for _, perShard := range []int{1, movingChunksPerShard, addShardChunksPerShard} {
		b := sessionChunkBounds(perShard)
		if len(b) != 2*perShard+1 {
			t.Fatalf("%d per shard: %d bounds", perShard, len(b))
		}
		if _, ok := b[0][0].Value.(bson.MinKey); !ok {
			t.Errorf("%d per shard: first bound %v", perShard, b[0])
		}
		if _, ok := b[len(b)-1][0].Value.(bson.MaxKey); !ok {
			t.Errorf("%d per shard: last bound %v", perShard, b[len(b)-1])
		}
		if b[perShard][0].Value != int64(0) {
			t.Errorf("%d per shard: the middle bound is %v, not 0", perShard, b[perShard][0].Value)
		}
		hashes := []float64{math.MinInt64}
		for _, d := range b[1 : len(b)-1] {
			hashes = append(hashes, float64(d[0].Value.(int64)))
		}
		hashes = append(hashes, math.MaxInt64)
		width := math.Exp2(64) / float64(2*perShard)
		for j := 1; j < len(hashes); j++ {
			if w := hashes[j] - hashes[j-1]; math.Abs(w-width) > width*1e-9 {
				t.Errorf("%d per shard: chunk %d is %g wide, want %g", perShard, j-1, w, width)
			}
		}
	}
}

// opsAt builds a sample at second sec of every shard's cumulative count.
func opsAt(t0 time.Time, sec float64, ops ...int64) opsSample {
	return opsSample{at: t0.Add(time.Duration(sec * float64(time.Second))), ops: ops}
}

// A third shard whose share steps up as the balancer moves chunks to it:
// a third is reached where it holds for shareHold intervals, not at a
// lone interval above it.
func TestShareReachedNeedsTheShareToHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	added := t0.Add(2500 * time.Millisecond)
	// Per-second operations of shards 0, 1 and the new shard 2.
	perSec := [][3]int64{
		{500, 500, 0}, {500, 500, 0}, // before addShard
		{500, 500, 0}, {460, 460, 80}, // first chunk moved
		{300, 300, 400}, // a lone second above the share (a burst)
		{400, 420, 180}, {340, 340, 320}, {330, 340, 330}, {330, 335, 335}, {340, 330, 330},
	}
	samples := []opsSample{opsAt(t0, 0, 0, 0, 0)}
	cum := [3]int64{}
	for i, p := range perSec {
		for k := range cum {
			cum[k] += p[k]
		}
		samples = append(samples, opsAt(t0, float64(i+1), cum[0], cum[1], cum[2]))
	}
	at, ok := shareReached(samples, 2, thirdShare, shareHold, added)
	if !ok || !at.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("reached %v at %v, want at +7s", ok, at.Sub(t0))
	}
	if _, ok := shareReached(samples[:9], 2, thirdShare, shareHold, added); ok {
		t.Errorf("two intervals at a third count as held")
	}
	if _, ok := shareReached(samples, 2, thirdShare, shareHold, t0.Add(20*time.Second)); ok {
		t.Errorf("intervals before since counted")
	}
	res := shareResult(samples, 2, added)
	if !res.Reached || res.ReachedSeconds != 4.5 {
		t.Errorf("result reached %v after %v s, want 4.5", res.Reached, res.ReachedSeconds)
	}
	if res.OpsBefore != 1000 || res.OpsAfter != 1000 {
		t.Errorf("ops/s before %v, after %v, want 1000 and 1000", res.OpsBefore, res.OpsAfter)
	}
}

// An interval in which no shard served anything has no share, rather
// than a share of zero or a division by zero.
func TestIntervalShareOfNothing(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if _, ok := intervalShare(opsAt(t0, 0, 5, 5, 0), opsAt(t0, 1, 5, 5, 0), 2); ok {
		t.Errorf("an idle interval has a share")
	}
}

// samplesDeleting are a shard's stored-count samples every 10 ms while it
// deletes each of its documents (expiries in order) late(expiry) late.
func samplesDeleting(expiries []time.Time, from, to time.Time, late func(time.Time) time.Duration) []ttlSample {
	var out []ttlSample
	for at := from; at.Before(to); at = at.Add(10 * time.Millisecond) {
		n := 0
		for _, e := range expiries {
			if !e.Add(late(e)).After(at) {
				n++
			}
		}
		out = append(out, ttlSample{sent: at, recv: at.Add(time.Millisecond), deleted: int64(n)})
	}
	return out
}

// Two shards: one deletes 100 ms late in the first window and 200 ms
// late in the second, the other, holding 2 % of the documents, 300 ms
// late throughout. Each window's p99 is the slow shard's and its p50 the
// fast one's of that window, each shard's own p99 its own, and every
// document counts once, in the window it expires in.
func TestShardsLatenessIsOneDistributionPerWindow(t *testing.T) {
	s := newSchedule(1000, time.Second)
	first := s.startAtOrAfter(s.anchor)
	split := s.expiry(500)
	placed := [][]int{nil, nil}
	for i := range s.n {
		side := 0
		if i%50 == 0 {
			side = 1
		}
		placed[side] = append(placed[side], i)
	}
	late := []func(time.Time) time.Duration{
		func(e time.Time) time.Duration { return time.Duration(100*(1+windowOf(e, split))) * time.Millisecond },
		func(time.Time) time.Duration { return 300 * time.Millisecond },
	}
	samples := make([][]ttlSample, 2)
	for side, ids := range placed {
		var exp []time.Time
		for _, i := range ids {
			exp = append(exp, s.expiry(i))
		}
		samples[side] = samplesDeleting(exp, first.Add(-50*time.Millisecond), first.Add(1500*time.Millisecond), late[side])
	}
	within := func(v, want float64) bool { return v >= want*0.97 && v <= want*1.1 }
	for w, got := range shardsLateness(samples, placed, s, split) {
		if got.Expiring != 500 || got.Lateness.Deleted != 500 {
			t.Fatalf("window %d: %d expiring, %d deleted, want 500 and 500", w, got.Expiring, got.Lateness.Deleted)
		}
		// The histogram's quantiles are within about 3 % of the true value,
		// and the upper bound adds up to one sampling interval.
		fast := float64(100 * (1 + w))
		if !within(got.Lateness.Upper.P99Ms, 300) || !within(got.Lateness.Upper.P50Ms, fast) {
			t.Errorf("window %d: p50 %v, p99 %v ms, want %v and 300", w, got.Lateness.Upper.P50Ms, got.Lateness.Upper.P99Ms, fast)
		}
		if len(got.ShardP99Ms) != 2 || !within(got.ShardP99Ms[0], fast) || !within(got.ShardP99Ms[1], 300) {
			t.Errorf("window %d: shards' p99 %v, want [%v 300]", w, got.ShardP99Ms, fast)
		}
	}
}

// Every target, the migration phase's among them, has its row in the
// table, in the phase that measures it.
func TestEveryTargetHasARow(t *testing.T) {
	rep := &Report{}
	labels := map[string]string{}
	for _, r := range rows(rep, ShortSizes()) {
		labels[r.label] = r.phase
	}
	for _, d := range targetDefs() {
		phase, ok := labels["**"+d.name+"**"]
		if !ok {
			t.Errorf("target %q has no row", d.name)
			continue
		}
		if !slices.Contains(AllPhases(), phase) {
			t.Errorf("target %q: row in unknown phase %q", d.name, phase)
		}
	}
}
