package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// cmdValidate is mongos's validate: every shard that holds the
// collection validates its part, each reply under raw by shard id. For a
// collection not sharded the reply is its one shard's; for a sharded one
// valid is whether every part is.
func cmdValidate(r *Router, op *operation) (bson.D, error) {
	coll, ok := op.body[0].Value.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "collection name has invalid type %s", bsonutil.TypeName(op.body[0].Value))
	}
	p, ts, err := r.readTargets(op, op.db+"."+coll, nil)
	if err != nil {
		return nil, err
	}
	replies := make([]bson.D, len(ts))
	err = r.fanOut(op, len(ts), func(sub *operation, i int) error {
		reply, err := r.sendOK(sub, ts[i], passThrough(op.body))
		replies[i] = forwardable(reply)
		return err
	})
	if err != nil {
		return nil, err
	}
	raw, valid := bson.D{}, true
	for i, t := range ts {
		raw = append(raw, bson.E{Key: t.shard, Value: replies[i]})
		valid = valid && bsonutil.TrueValue(mustField(replies[i], "valid"))
	}
	if p.table == nil {
		return append(bsonutil.WithoutField(replies[0], "ok"), bson.E{Key: "raw", Value: raw}), nil
	}
	return bson.D{{Key: "valid", Value: valid}, {Key: "raw", Value: raw}}, nil
}
