package shardmeta

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// RoutingTable is one collection's chunks as a router holds them, sorted
// by Min and checked to cover the key space from MinKey to MaxKey exactly
// once. It is immutable: a refresh builds a new one.
type RoutingTable struct {
	coll    Collection
	pattern *shardkey.Pattern
	chunks  []Chunk
	// hashedMins holds each chunk's Min as an int64 when the key is one
	// hashed field (MinKey as math.MinInt64), so that placing a hash is a
	// search over integers.
	hashedMins []int64
	version    ChunkVersion
	byShard    map[string]ChunkVersion
}

// ErrBadRoutingTable reports chunks that do not describe a collection's
// whole key space; a router must not route with them.
var ErrBadRoutingTable = errors.New("shardmeta: chunks do not tile the key space")

// NewRoutingTable checks coll's chunks (in any order) and builds its
// routing table: every chunk of coll's UUID, ordered, each Min below its
// Max, the first starting at the global minimum, each starting where the
// last ended, the last ending at the global maximum.
func NewRoutingTable(coll Collection, chunks []Chunk) (*RoutingTable, error) {
	pattern, err := shardkey.Parse(coll.Key)
	if err != nil {
		return nil, fmt.Errorf("shardmeta: collection %s: %w", coll.ID, err)
	}
	sorted := slices.Clone(chunks)
	slices.SortFunc(sorted, func(a, b Chunk) int { return compareKeys(a.Min, b.Min) })
	if err := checkTiling(coll, pattern, sorted); err != nil {
		return nil, err
	}
	t := &RoutingTable{coll: coll, pattern: pattern, chunks: sorted, byShard: map[string]ChunkVersion{}}
	t.indexVersions()
	if pattern.IsSingleHashed() {
		t.hashedMins = hashedMins(sorted)
	}
	return t, nil
}

func checkTiling(coll Collection, pattern *shardkey.Pattern, chunks []Chunk) error {
	if len(chunks) == 0 {
		return fmt.Errorf("%w: %s has no chunks", ErrBadRoutingTable, coll.ID)
	}
	lo, hi := GlobalMin(pattern), GlobalMax(pattern)
	prev := lo
	for i, c := range chunks {
		switch {
		case !bytesEqual(c.UUID, coll.UUID):
			return fmt.Errorf("%w: chunk %d belongs to another collection", ErrBadRoutingTable, i)
		case !sameFields(c.Min, lo) || !sameFields(c.Max, lo):
			return fmt.Errorf("%w: chunk %d has bounds of another key", ErrBadRoutingTable, i)
		case compareKeys(c.Min, prev) != 0:
			return fmt.Errorf("%w: chunk %d starts at %s, not at %s", ErrBadRoutingTable, i,
				bsonutil.Format(c.Min), bsonutil.Format(prev))
		case compareKeys(c.Min, c.Max) >= 0:
			return fmt.Errorf("%w: chunk %d is empty or inverted", ErrBadRoutingTable, i)
		}
		prev = c.Max
	}
	if compareKeys(prev, hi) != 0 {
		return fmt.Errorf("%w: the last chunk ends at %s", ErrBadRoutingTable, bsonutil.Format(prev))
	}
	return nil
}

// sameFields reports whether a bound names the key's fields in order.
func sameFields(bound, key bson.D) bool {
	if len(bound) != len(key) {
		return false
	}
	for i := range bound {
		if bound[i].Key != key[i].Key {
			return false
		}
	}
	return true
}

func bytesEqual(a, b bson.Binary) bool {
	return a.Subtype == b.Subtype && string(a.Data) == string(b.Data)
}

// indexVersions computes the collection version (the highest chunk
// version) and each shard's version (the highest of its chunks).
func (t *RoutingTable) indexVersions() {
	base := ChunkVersion{Epoch: t.coll.Epoch, Timestamp: t.coll.Timestamp}
	t.version = base
	for _, c := range t.chunks {
		v := base.withPlacement(c.Lastmod)
		if t.version.IsOlderThan(v) {
			t.version = v
		}
		if have, ok := t.byShard[c.Shard]; !ok || have.IsOlderThan(v) {
			t.byShard[c.Shard] = v
		}
	}
}

func hashedMins(chunks []Chunk) []int64 {
	mins := make([]int64, len(chunks))
	for i, c := range chunks {
		switch v := c.Min[0].Value.(type) {
		case int64:
			mins[i] = v
		default: // MinKey: below every hash
			mins[i] = math.MinInt64
		}
	}
	return mins
}

// compareKeys orders two shard key values (or bounds) field by field in
// BSON order.
func compareKeys(a, b bson.D) int {
	for i := range min(len(a), len(b)) {
		if c := bsonutil.Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// GlobalMin is the lowest bound of a key: MinKey in every field.
func GlobalMin(p *shardkey.Pattern) bson.D { return fill(p, bson.MinKey{}) }

// GlobalMax is the highest bound of a key: MaxKey in every field.
func GlobalMax(p *shardkey.Pattern) bson.D { return fill(p, bson.MaxKey{}) }

func fill(p *shardkey.Pattern, v any) bson.D {
	fields := p.Fields()
	d := make(bson.D, len(fields))
	for i, f := range fields {
		d[i] = bson.E{Key: f.Path, Value: v}
	}
	return d
}

// Collection returns the config.collections document the table was built from.
func (t *RoutingTable) Collection() Collection { return t.coll }

// Pattern returns the collection's shard key pattern.
func (t *RoutingTable) Pattern() *shardkey.Pattern { return t.pattern }

// Chunks returns the chunks in key order.
func (t *RoutingTable) Chunks() []Chunk { return slices.Clone(t.chunks) }

// ChunkFor returns the chunk owning a shard key value, given in the form
// shardkey.Pattern.Extract returns (every field of the key, in order).
func (t *RoutingTable) ChunkFor(key bson.D) Chunk {
	// The first chunk has the global minimum as Min, so i >= 1.
	i := sort.Search(len(t.chunks), func(i int) bool { return compareKeys(t.chunks[i].Min, key) > 0 })
	return t.chunks[i-1]
}

// ChunkForHash returns the chunk owning a hash, for a key that is one
// hashed field; ok is false for other keys.
func (t *RoutingTable) ChunkForHash(h int64) (c Chunk, ok bool) {
	if t.hashedMins == nil {
		return Chunk{}, false
	}
	i := sort.Search(len(t.hashedMins), func(i int) bool { return t.hashedMins[i] > h })
	return t.chunks[i-1], true
}

// ShardsForRange returns the shards owning some of [lo, hi), sorted and
// without repeats; an empty or inverted range touches none.
func (t *RoutingTable) ShardsForRange(lo, hi bson.D) []string {
	if compareKeys(lo, hi) >= 0 {
		return nil
	}
	var shards []string
	for _, c := range t.chunks {
		if compareKeys(c.Max, lo) > 0 && compareKeys(c.Min, hi) < 0 {
			shards = append(shards, c.Shard)
		}
	}
	slices.Sort(shards)
	return slices.Compact(shards)
}

// AllShards returns the shards a whole-collection scan must visit: every
// shard that owns a chunk, sorted.
func (t *RoutingTable) AllShards() []string {
	return slices.Sorted(maps.Keys(t.byShard))
}

// CollectionVersion is the highest chunk version: a router whose cached
// collection version is older than a shard's must refresh.
func (t *RoutingTable) CollectionVersion() ChunkVersion { return t.version }

// ShardVersion is the version a router sends to shard for this
// collection: its highest chunk version, or 0|0 of this incarnation for
// a shard that owns no chunk.
func (t *RoutingTable) ShardVersion(shard string) ChunkVersion {
	if v, ok := t.byShard[shard]; ok {
		return v
	}
	return ChunkVersion{Epoch: t.coll.Epoch, Timestamp: t.coll.Timestamp}
}
