package shardmeta

import (
	"errors"
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardkey"
)

// InitialLayout is what shardCollection decides for an empty collection
// with a hashed key.
type InitialLayout struct {
	// Pattern is the shard key; its first field must be the hashed one.
	Pattern *shardkey.Pattern
	// UUID names the collection.
	UUID bson.Binary
	// Epoch and ValidAfter (the cluster time of the commit) name the new
	// incarnation; ValidAfter is also every chunk's onCurrentShardSince.
	Epoch      bson.ObjectID
	ValidAfter bson.Timestamp
	// Shards receive one chunk each, in this order. mongod shuffles its
	// non-draining shards first; the caller chooses the order.
	Shards []string
	// NewID gives each chunk its _id; nil means bson.NewObjectID.
	NewID func() bson.ObjectID
}

// ErrNotHashedPrefix reports a key whose first field is not hashed, for
// which 8.0 does not pre-split an empty collection.
var ErrNotHashedPrefix = errors.New("shardmeta: initial chunks need a key whose first field is hashed")

// HashedInitialChunks lays out an empty collection sharded on a hashed
// key as 8.0 does (SplitPointsBasedSplitPolicy): one chunk per shard,
// bounded by HashedSplitPoints, chunk i on Shards[i], all with version
// major 1 and minor 0, 1, 2… in key order.
func HashedInitialChunks(l InitialLayout) ([]Chunk, error) {
	fields := l.Pattern.Fields()
	if len(fields) == 0 || !fields[0].Hashed {
		return nil, ErrNotHashedPrefix
	}
	if len(l.Shards) == 0 {
		return nil, errors.New("shardmeta: initial chunks need at least one shard")
	}
	newID := l.NewID
	if newID == nil {
		newID = bson.NewObjectID
	}
	bounds := splitBounds(l.Pattern, HashedSplitPoints(len(l.Shards)))
	chunks := make([]Chunk, len(l.Shards))
	for i, shard := range l.Shards {
		chunks[i] = Chunk{
			ID: newID(), UUID: l.UUID, Min: bounds[i], Max: bounds[i+1], Shard: shard,
			Lastmod:             bson.Timestamp{T: 1, I: uint32(i)},
			OnCurrentShardSince: l.ValidAfter,
			History:             []ChunkHistory{{ValidAfter: l.ValidAfter, Shard: shard}},
		}
	}
	return chunks, nil
}

// splitBounds turns split points into chunk bounds: the global minimum,
// each point as {hashed: point, rest: MinKey}, the global maximum.
func splitBounds(p *shardkey.Pattern, points []int64) []bson.D {
	bounds := make([]bson.D, 0, len(points)+2)
	bounds = append(bounds, GlobalMin(p))
	for _, pt := range points {
		b := GlobalMin(p)
		b[0].Value = pt
		bounds = append(bounds, b)
	}
	return append(bounds, GlobalMax(p))
}

// HashedSplitPoints returns the n-1 hash values mongod's
// calculateHashedSplitPoints splits n chunks at, ascending: intervals of
// (MaxInt64/n)*2 placed symmetrically around 0 — a point at 0 for even n,
// points at ±interval/2 first for odd n.
func HashedSplitPoints(n int) []int64 {
	if n <= 1 {
		return nil
	}
	interval := (math.MaxInt64 / int64(n)) * 2
	var current int64
	points := make([]int64, 0, n-1)
	if n%2 == 0 {
		points = append(points, 0)
		current = interval
	} else {
		current = interval / 2
	}
	for range (n - 1) / 2 {
		points = append(points, -current, current)
		current += interval
	}
	slices.Sort(points)
	return points
}
