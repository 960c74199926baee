package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// An aggregation that names other collections ($lookup, $graphLookup,
// $unionWith) or writes one ($out, $merge) runs whole on its database's
// primary shard when every collection it names is unsharded there, as
// mongos runs a pipeline that one shard can answer. Over sharded
// collections these stages are refused.

// aggregateOnPrimary runs an aggregation naming other collections on the
// primary shard of its database, when it and every collection it names
// are unsharded there.
func (r *Router) aggregateOnPrimary(op *operation, ns string, foreign []string, first string, writes bool) (bson.D, error) {
	p, err := r.place(op, ns, writes)
	if err != nil {
		return nil, err
	}
	if err := r.checkColocated(op, p, first, foreign...); err != nil {
		return nil, err
	}
	ts, err := r.targets(op, p, nil)
	if err != nil {
		return nil, err
	}
	return r.forwardCursor(op, ts[0], passThrough(op.body))
}

// checkColocated refuses stage (a stage or a command) unless p's
// collection and every one of others are unsharded on p's primary shard.
func (r *Router) checkColocated(op *operation, p placement, stage string, others ...string) error {
	if p.table != nil {
		return foreignRefused(stage, p.ns)
	}
	pdb, _ := splitNS(p.ns)
	for _, other := range others {
		odb, coll := splitNS(other)
		if other == p.ns || coll == "" {
			continue
		}
		fp, err := r.place(op, other, false)
		if err != nil {
			return err
		}
		if fp.table != nil || (odb != pdb && (!fp.found || fp.db.Primary != p.db.Primary)) {
			return foreignRefused(stage, other)
		}
	}
	return nil
}

// foreignRefused is the refusal of a stage whose collections do not all
// live, unsharded, on one primary shard.
func foreignRefused(stage, ns string) error {
	return mongoerr.Newf(mongoerr.IllegalOperation,
		"%s is supported through mayfly route only when every collection it names is unsharded on its database's primary shard, and %s is not", stage, ns)
}

// cmdRenameCollection renames an unsharded collection on its database's
// primary shard, where it lives, as mongos does; a sharded source or
// target, or another database whose primary shard differs, is refused.
func cmdRenameCollection(r *Router, op *operation) (bson.D, error) {
	from, ok := op.body[0].Value.(string)
	if !ok {
		return nil, mongoerr.WrongType("renameCollection", "renameCollection", op.body[0].Value, "string")
	}
	toValue, _ := bsonutil.Field(op.body, "to")
	to, ok := toValue.(string)
	if !ok {
		return nil, mongoerr.WrongType("renameCollection", "to", toValue, "string")
	}
	// The check reads the config servers afresh: renaming a sharded
	// collection's part on one shard, on a stale cache, would lose it.
	r.catalog.invalidate(from)
	r.catalog.invalidate(to)
	p, err := r.place(op, from, false)
	if err != nil {
		return nil, err
	}
	if err := r.checkColocated(op, p, "renameCollection", to); err != nil {
		return nil, err
	}
	ts, err := r.targets(op, p, nil)
	if err != nil {
		return nil, err
	}
	ts[0].db, ts[0].version = "admin", nil
	reply, err := r.send(op, ts[0], passThrough(op.body))
	return forwardable(reply), err
}
