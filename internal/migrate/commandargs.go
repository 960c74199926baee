package migrate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// How moveChunk, moveRange and split name a chunk or a split point over
// a collection's routing table, with mongos's refusals.

// ChunkToMove reads moveChunk's find or bounds, exactly one of them.
func ChunkToMove(body bson.D, table *shardmeta.RoutingTable) (shardmeta.Chunk, error) {
	find, hasFind := bsonutil.DocField(body, "find")
	bounds, hasBounds := bsonutil.Field(body, "bounds")
	if hasFind == hasBounds {
		return shardmeta.Chunk{}, mongoerr.New(mongoerr.InvalidOptions, "need to specify either a find query, or both lower and upper bounds.")
	}
	if hasFind {
		key, err := boundOf(table, find)
		if err != nil {
			return shardmeta.Chunk{}, err
		}
		return table.ChunkFor(key), nil
	}
	pair, _ := bounds.(bson.A)
	lo, okLo := pairAt(pair, 0)
	hi, okHi := pairAt(pair, 1)
	if len(pair) != 2 || !okLo || !okHi {
		return shardmeta.Chunk{}, mongoerr.New(mongoerr.InvalidOptions, "need to specify either a find query, or both lower and upper bounds.")
	}
	chunk := table.ChunkFor(lo)
	if CompareBounds(chunk.Min, lo) != 0 || CompareBounds(chunk.Max, hi) != 0 {
		return shardmeta.Chunk{}, mongoerr.Newf(mongoerr.InvalidOptions, "no chunk found with the shard key bounds %s",
			Range{Min: lo, Max: hi})
	}
	return chunk, nil
}

// ChunkBefore is the chunk whose max is hi, or that holds the key just
// below it.
func ChunkBefore(table *shardmeta.RoutingTable, hi bson.D) shardmeta.Chunk {
	chunks := table.Chunks()
	for _, c := range chunks {
		if CompareBounds(c.Max, hi) >= 0 {
			return c
		}
	}
	return chunks[len(chunks)-1]
}

// SplitPoint reads split's middle, find or bounds, exactly one of them.
func SplitPoint(body bson.D, table *shardmeta.RoutingTable) (bson.D, error) {
	middle, hasMiddle := bsonutil.DocField(body, "middle")
	find, hasFind := bsonutil.DocField(body, "find")
	bounds, hasBounds := bsonutil.Field(body, "bounds")
	given := 0
	for _, has := range []bool{hasMiddle, hasFind, hasBounds} {
		if has {
			given++
		}
	}
	if given != 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "need to specify exactly one of find, bounds or middle")
	}
	if hasMiddle {
		return normalizeBound(table, middle)
	}
	var chunk shardmeta.Chunk
	if hasFind {
		key, err := boundOf(table, find)
		if err != nil {
			return nil, err
		}
		chunk = table.ChunkFor(key)
	} else {
		pair, _ := bounds.(bson.A)
		lo, ok := pairAt(pair, 0)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "bounds must be [min, max]")
		}
		chunk = table.ChunkFor(lo)
	}
	return midpoint(table, chunk)
}

// midpoint is the middle of a single-hashed chunk's hash range.
func midpoint(table *shardmeta.RoutingTable, c shardmeta.Chunk) (bson.D, error) {
	field, _ := table.Pattern().HashedField()
	if at, ok := Midpoint(c, field); ok && table.Pattern().IsSingleHashed() {
		return at, nil
	}
	return nil, mongoerr.Newf(mongoerr.CannotSplit, "cannot find a split point for chunk %s", Range{Min: c.Min, Max: c.Max})
}

// boundOf is a query's shard key in bound form (hashed for a hashed key).
func boundOf(table *shardmeta.RoutingTable, find bson.D) (bson.D, error) {
	key, err := table.Pattern().Bound(find)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InvalidOptions, "no shard key found in chunk query %s", bsonutil.Format(find))
	}
	return key, nil
}

// normalizeBound reads a split point given in the key's stored form,
// numbers of a hashed key as int64 hashes.
func normalizeBound(table *shardmeta.RoutingTable, d bson.D) (bson.D, error) {
	fields := table.Pattern().Fields()
	if len(d) != len(fields) {
		return nil, mongoerr.Newf(mongoerr.InvalidOptions, "split point %s is not a shard key of pattern %s",
			bsonutil.Format(d), table.Pattern())
	}
	out := make(bson.D, len(d))
	for i, e := range d {
		v := e.Value
		if fields[i].Hashed {
			n, ok := hashValue(v)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.InvalidOptions, "split point %s must be a hash (a number) for the hashed field %s",
					bsonutil.Format(d), fields[i].Path)
			}
			v = n
		}
		out[i] = bson.E{Key: fields[i].Path, Value: v}
	}
	return out, nil
}

// hashValue reads a hash given as a number.
func hashValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}

func pairAt(a bson.A, i int) (bson.D, bool) {
	if i >= len(a) {
		return nil, false
	}
	d, ok := a[i].(bson.D)
	return d, ok
}
