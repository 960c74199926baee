package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Chunk administration through the router: moveChunk, moveRange and
// split, as mongosh's sh.moveChunk, sh.moveRange, sh.splitAt and
// sh.splitFind send them. The router finds the range in a freshly read
// routing table, then asks the donor shard to migrate it
// (_shardsvrMoveRange) or the config servers to split it
// (_configsvrCommitChunkSplit), and forgets the collection's table.

// migrationCommands are this file's rows of the command table.
func migrationCommands() map[string]handlerFunc {
	return map[string]handlerFunc{"moveChunk": cmdMoveChunk, "movechunk": cmdMoveChunk,
		"moveRange": cmdMoveRange, "split": cmdSplit}
}

// freshRouting reads ns's routing table from the config servers, as
// mongos refreshes before a chunk command; an unsharded collection is
// refused.
func (r *Router) freshRouting(op *operation, ns string) (*shardmeta.RoutingTable, error) {
	r.catalog.invalidate(ns)
	table, err := r.catalog.routing(op, ns)
	if err != nil {
		return nil, err
	}
	if table == nil {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotSharded, "%s is not sharded.", ns)
	}
	return table, nil
}

// cmdMoveChunk moves the chunk holding find's shard key, or the chunk
// with exactly bounds, to `to`; mongos answers with the time it took.
func cmdMoveChunk(r *Router, op *operation) (bson.D, error) {
	ns, to, table, err := r.moveArgs(op, "to")
	if err != nil {
		return nil, err
	}
	chunk, err := chunkToMove(op, table)
	if err != nil {
		return nil, err
	}
	begun := r.clock.Now()
	if err := r.moveRange(op, ns, to, chunk.Shard, migrate.Range{Min: chunk.Min, Max: chunk.Max}); err != nil {
		return nil, err
	}
	return bson.D{{Key: "millis", Value: int32(r.clock.Now().Sub(begun).Milliseconds())}}, nil
}

// moveArgs reads a move's namespace and destination (field toField) and
// the collection's fresh routing table.
func (r *Router) moveArgs(op *operation, toField string) (ns, to string, table *shardmeta.RoutingTable, err error) {
	if err = adminOnly(op); err != nil {
		return "", "", nil, err
	}
	if ns, err = stringArg(op); err != nil {
		return "", "", nil, err
	}
	if to, err = requiredString(op, toField); err != nil {
		return "", "", nil, err
	}
	table, err = r.freshRouting(op, ns)
	return ns, to, table, err
}

// chunkToMove reads moveChunk's find or bounds, exactly one of them.
func chunkToMove(op *operation, table *shardmeta.RoutingTable) (shardmeta.Chunk, error) {
	find, hasFind := docField(op.body, "find")
	bounds, hasBounds := bsonutil.Field(op.body, "bounds")
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
	if migrate.CompareBounds(chunk.Min, lo) != 0 || migrate.CompareBounds(chunk.Max, hi) != 0 {
		return shardmeta.Chunk{}, mongoerr.Newf(mongoerr.InvalidOptions, "no chunk found with the shard key bounds %s",
			migrate.Range{Min: lo, Max: hi})
	}
	return chunk, nil
}

// cmdMoveRange moves [min, max) to toShard; a missing bound is the
// bound of the chunk holding the other one.
func cmdMoveRange(r *Router, op *operation) (bson.D, error) {
	ns, to, table, err := r.moveArgs(op, "toShard")
	if err != nil {
		return nil, err
	}
	lo, hasMin := docField(op.body, "min")
	hi, hasMax := docField(op.body, "max")
	switch {
	case !hasMin && !hasMax:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "At least one of the bounds (min or max) must be specified")
	case !hasMin:
		lo = chunkBefore(table, hi).Min
	case !hasMax:
		hi = table.ChunkFor(lo).Max
	}
	rng := migrate.Range{Min: lo, Max: hi}
	owner := migrate.OwnerOf(table.Chunks(), rng)
	if owner == "" {
		return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the range %s of %s is not within one shard's chunks", rng, ns)
	}
	return bson.D{}, r.moveRange(op, ns, to, owner, rng)
}

// chunkBefore is the chunk whose max is hi, or that holds the key just
// below it.
func chunkBefore(table *shardmeta.RoutingTable, hi bson.D) shardmeta.Chunk {
	chunks := table.Chunks()
	for _, c := range chunks {
		if migrate.CompareBounds(c.Max, hi) >= 0 {
			return c
		}
	}
	return chunks[len(chunks)-1]
}

// moveRange has the donor migrate rng to `to`. A range already on `to`
// is left as it is.
func (r *Router) moveRange(op *operation, ns, to, donor string, rng migrate.Range) error {
	if _, err := r.catalog.shard(op, to); err != nil {
		return mongoerr.Newf(mongoerr.ShardNotFound, "Could not move chunk in %s to %s because that shard does not exist", ns, to)
	}
	defer r.catalog.invalidate(ns)
	if donor == to {
		return nil
	}
	rs, err := r.catalog.shard(op, donor)
	if err != nil {
		return err
	}
	reply, err := r.call(op, rs, "admin", bson.D{{Key: "_shardsvrMoveRange", Value: ns}, {Key: "toShard", Value: to},
		{Key: "min", Value: rng.Min}, {Key: "max", Value: rng.Max}, {Key: "writeConcern", Value: majority()}})
	if err != nil {
		return err
	}
	return replyError(reply)
}

// cmdSplit splits the chunk holding middle (in the key's stored form:
// the hash for a hashed key) there, or the chunk holding find's key or
// with exactly bounds at its middle.
func cmdSplit(r *Router, op *operation) (bson.D, error) {
	if err := adminOnly(op); err != nil {
		return nil, err
	}
	ns, err := stringArg(op)
	if err != nil {
		return nil, err
	}
	table, err := r.freshRouting(op, ns)
	if err != nil {
		return nil, err
	}
	point, err := splitPoint(op, table)
	if err != nil {
		return nil, err
	}
	reply, err := r.call(op, r.config, "admin", bson.D{{Key: "_configsvrCommitChunkSplit", Value: ns},
		{Key: "splitPoints", Value: bson.A{point}}, {Key: "writeConcern", Value: majority()}})
	if err != nil {
		return nil, err
	}
	r.catalog.invalidate(ns)
	return bson.D{}, replyError(reply)
}

// splitPoint reads split's middle, find or bounds, exactly one of them.
func splitPoint(op *operation, table *shardmeta.RoutingTable) (bson.D, error) {
	middle, hasMiddle := docField(op.body, "middle")
	find, hasFind := docField(op.body, "find")
	bounds, hasBounds := bsonutil.Field(op.body, "bounds")
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
	if at, ok := migrate.Midpoint(c, field); ok && table.Pattern().IsSingleHashed() {
		return at, nil
	}
	return nil, mongoerr.Newf(mongoerr.CannotSplit, "cannot find a split point for chunk %s", migrate.Range{Min: c.Min, Max: c.Max})
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

func docField(body bson.D, name string) (bson.D, bool) {
	v, ok := bsonutil.Field(body, name)
	d, isDoc := v.(bson.D)
	return d, ok && isDoc
}

func pairAt(a bson.A, i int) (bson.D, bool) {
	if i >= len(a) {
		return nil, false
	}
	d, ok := a[i].(bson.D)
	return d, ok
}

// requiredString reads a required string field of the command.
func requiredString(op *operation, name string) (string, error) {
	v, ok := bsonutil.Field(op.body, name)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", op.name, name)
	}
	s, isString := v.(string)
	if !isString {
		return "", mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'",
			op.name, name, bsonutil.TypeName(v))
	}
	return s, nil
}
