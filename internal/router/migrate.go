package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
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
	chunk, err := migrate.ChunkToMove(op.body, table)
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
	if ns, err = stringArg(op); err != nil {
		return "", "", nil, err
	}
	if to, err = requiredString(op, toField); err != nil {
		return "", "", nil, err
	}
	table, err = r.freshRouting(op, ns)
	return ns, to, table, err
}

// cmdMoveRange moves [min, max) to toShard; a missing bound is the
// bound of the chunk holding the other one.
func cmdMoveRange(r *Router, op *operation) (bson.D, error) {
	ns, to, table, err := r.moveArgs(op, "toShard")
	if err != nil {
		return nil, err
	}
	lo, hasMin := bsonutil.DocField(op.body, "min")
	hi, hasMax := bsonutil.DocField(op.body, "max")
	switch {
	case !hasMin && !hasMax:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "At least one of the bounds (min or max) must be specified")
	case !hasMin:
		lo = migrate.ChunkBefore(table, hi).Min
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
	return wireclient.MongoError(reply)
}

// cmdSplit splits the chunk holding middle (in the key's stored form:
// the hash for a hashed key) there, or the chunk holding find's key or
// with exactly bounds at its middle.
func cmdSplit(r *Router, op *operation) (bson.D, error) {
	ns, err := stringArg(op)
	if err != nil {
		return nil, err
	}
	table, err := r.freshRouting(op, ns)
	if err != nil {
		return nil, err
	}
	point, err := migrate.SplitPoint(op.body, table)
	if err != nil {
		return nil, err
	}
	reply, err := r.call(op, r.config, "admin", bson.D{{Key: "_configsvrCommitChunkSplit", Value: ns},
		{Key: "splitPoints", Value: bson.A{point}}, {Key: "writeConcern", Value: majority()}})
	if err != nil {
		return nil, err
	}
	r.catalog.invalidate(ns)
	return bson.D{}, wireclient.MongoError(reply)
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
