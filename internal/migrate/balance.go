package migrate

import (
	"math"
	"math/big"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// ShardInfo is what the balancer knows of a shard.
type ShardInfo struct {
	ID       string
	Draining bool
}

// CollectionChunks is one sharded collection's placement.
type CollectionChunks struct {
	Namespace string
	// HashedField is the key's one hashed field; only such keys are
	// split by the balancer.
	HashedField string
	NoBalance   bool
	Chunks      []shardmeta.Chunk
}

// Step is one thing the balancer asks for: a move of Range from Donor
// to Recipient, or (Split) a split of Range's chunk at SplitAt.
type Step struct {
	Namespace string
	Range     Range
	Donor     string
	Recipient string
	Split     bool
	SplitAt   bson.D
}

// Plan chooses one round of balancing: at most one step per shard, each
// shard taking part in one migration at a time (busy ones not at all).
// A draining shard gives its chunks to the least loaded other shard; then
// a collection whose chunk counts differ by two or more moves one chunk
// from the most to the least loaded shard. Counts that differ by one
// while a shard has none (one chunk per shard after an addShard) split
// the most loaded shard's widest chunk first, so the next round has a
// chunk to move: even a small collection spreads onto a new shard.
func Plan(colls []CollectionChunks, shards []ShardInfo, busy map[string]bool) []Step {
	taken := map[string]bool{}
	for s := range busy {
		taken[s] = true
	}
	var steps []Step
	for _, c := range colls {
		if c.NoBalance {
			continue
		}
		if s, ok := planCollection(c, shards, taken); ok {
			steps = append(steps, s)
			taken[s.Donor], taken[s.Recipient] = true, true
		}
	}
	return steps
}

func planCollection(c CollectionChunks, shards []ShardInfo, taken map[string]bool) (Step, bool) {
	counts := map[string][]shardmeta.Chunk{}
	for _, ch := range c.Chunks {
		counts[ch.Shard] = append(counts[ch.Shard], ch)
	}
	var active []string
	for _, s := range shards {
		if !s.Draining {
			active = append(active, s.ID)
		}
	}
	if len(active) == 0 {
		return Step{}, false
	}
	for _, s := range shards {
		if s.Draining && len(counts[s.ID]) > 0 && !taken[s.ID] {
			to, ok := leastLoaded(active, counts, taken)
			if !ok {
				return Step{}, false
			}
			return moveStep(c.Namespace, counts[s.ID][0], s.ID, to), true
		}
	}
	from, ok := mostLoaded(active, counts, taken)
	if !ok {
		return Step{}, false
	}
	to, ok := leastLoaded(active, counts, taken)
	if !ok || from == to {
		return Step{}, false
	}
	switch diff := len(counts[from]) - len(counts[to]); {
	case diff >= 2:
		return moveStep(c.Namespace, counts[from][0], from, to), true
	case diff == 1 && len(counts[to]) == 0 && c.HashedField != "":
		return splitStep(c, counts[from], from)
	}
	return Step{}, false
}

func moveStep(ns string, c shardmeta.Chunk, from, to string) Step {
	return Step{Namespace: ns, Range: Range{Min: c.Min, Max: c.Max}, Donor: from, Recipient: to}
}

// splitStep halves the widest of chunks by hash.
func splitStep(c CollectionChunks, chunks []shardmeta.Chunk, shard string) (Step, bool) {
	best, bestWidth := -1, new(big.Int)
	for i, ch := range chunks {
		if w, ok := hashWidth(ch); ok && w.Cmp(bestWidth) > 0 {
			best, bestWidth = i, w
		}
	}
	if best < 0 {
		return Step{}, false
	}
	ch := chunks[best]
	at, ok := Midpoint(ch, c.HashedField)
	return Step{Namespace: c.Namespace, Range: Range{Min: ch.Min, Max: ch.Max}, Donor: shard, Recipient: shard,
		Split: true, SplitAt: at}, ok
}

// hashWidth is how many hashes a single-hashed chunk spans; ok is false
// for other chunks and for one too narrow to split.
func hashWidth(c shardmeta.Chunk) (*big.Int, bool) {
	lo, hi, ok := hashBounds(c)
	if !ok {
		return nil, false
	}
	w := new(big.Int).Sub(big.NewInt(hi), big.NewInt(lo))
	return w, w.Cmp(big.NewInt(1)) > 0
}

// Midpoint is the split point halving a single-hashed chunk by hash,
// named by the key's hashed field; ok is false when it cannot be split.
func Midpoint(c shardmeta.Chunk, field string) (bson.D, bool) {
	w, ok := hashWidth(c)
	if !ok || field == "" {
		return nil, false
	}
	lo, _, _ := hashBounds(c)
	mid := new(big.Int).Add(big.NewInt(lo), new(big.Int).Rsh(w, 1)).Int64()
	return bson.D{{Key: field, Value: mid}}, true
}

// hashBounds reads a single-hashed chunk's bounds as int64s, MinKey and
// MaxKey as the ends of the range.
func hashBounds(c shardmeta.Chunk) (lo, hi int64, ok bool) {
	if len(c.Min) != 1 || len(c.Max) != 1 {
		return 0, 0, false
	}
	lo, ok1 := boundHash(c.Min[0].Value, math.MinInt64)
	hi, ok2 := boundHash(c.Max[0].Value, math.MaxInt64)
	return lo, hi, ok1 && ok2
}

func boundHash(v any, end int64) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bson.MinKey, bson.MaxKey:
		return end, true
	}
	return 0, false
}

// mostLoaded is the free shard with the most chunks, ties by id.
func mostLoaded(active []string, counts map[string][]shardmeta.Chunk, taken map[string]bool) (string, bool) {
	return pick(active, counts, taken, func(a, b int) bool { return a > b })
}

// leastLoaded is the free shard with the fewest chunks, ties by id.
func leastLoaded(active []string, counts map[string][]shardmeta.Chunk, taken map[string]bool) (string, bool) {
	return pick(active, counts, taken, func(a, b int) bool { return a < b })
}

func pick(active []string, counts map[string][]shardmeta.Chunk, taken map[string]bool, better func(a, b int) bool) (string, bool) {
	ids := slices.Sorted(slices.Values(active))
	best := ""
	for _, id := range ids {
		if taken[id] {
			continue
		}
		if best == "" || better(len(counts[id]), len(counts[best])) {
			best = id
		}
	}
	return best, best != ""
}
