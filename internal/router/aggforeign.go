package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

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
	if p.table != nil {
		return nil, foreignRefused(first, ns)
	}
	for _, other := range foreign {
		if other == ns || other == op.db+"." {
			continue
		}
		fp, err := r.place(op, other, false)
		if err != nil {
			return nil, err
		}
		odb, _ := splitNS(other)
		if fp.table != nil || (odb != op.db && (!fp.found || fp.db.Primary != p.db.Primary)) {
			return nil, foreignRefused(first, other)
		}
	}
	ts, err := r.targets(op, p, nil)
	if err != nil {
		return nil, err
	}
	return r.forwardCursor(op, ts[0], passThrough(op.body))
}

// foreignRefused is the refusal of a stage whose collections do not all
// live, unsharded, on one primary shard.
func foreignRefused(stage, ns string) error {
	return mongoerr.Newf(mongoerr.IllegalOperation,
		"%s is supported through mayfly route only when every collection it names is unsharded on its database's primary shard, and %s is not", stage, ns)
}
