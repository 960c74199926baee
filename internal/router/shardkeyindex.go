package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	indexcatalog "github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// hasShardKeyIndex reports whether a shard holds an index the shard key
// can use (mongod's isValidShardKeyIndex): its key starts with the
// pattern's fields, each as the pattern gives it, and it holds every
// document in the simple order (no partial filter, not sparse, no
// collation). mongod shards a collection with data only over one.
func (r *Router) hasShardKeyIndex(op *operation, t target, req shardRequest) (bool, error) {
	_, coll := splitNS(req.ns)
	reply, err := r.sendOK(op, t, bson.D{{Key: "listIndexes", Value: coll}})
	if err != nil {
		return false, err
	}
	cursor := bsonutil.ToD(mustField(reply, "cursor"))
	for _, raw := range bsonutil.ToA(mustField(cursor, "firstBatch")) {
		if usableForShardKey(bsonutil.ToD(raw), req.pattern.Spec()) {
			return true, nil
		}
	}
	return false, nil
}

func usableForShardKey(spec, pattern bson.D) bool {
	for _, option := range []string{"partialFilterExpression", "sparse", "collation"} {
		if v, ok := bsonutil.Field(spec, option); ok && (option != "sparse" || bsonutil.TrueValue(v)) {
			return false
		}
	}
	key := bsonutil.ToD(mustField(spec, "key"))
	if len(key) < len(pattern) {
		return false
	}
	for i, f := range pattern {
		if key[i].Key != f.Key || bsonutil.Compare(key[i].Value, f.Value) != 0 {
			return false
		}
	}
	return true
}

// buildShardKeyIndex creates the shard key's index on one shard, as
// mongod's shardCollection does on every shard that will own chunks, so
// each can find documents by their key (and a migration read a range).
// An index of the same key under another name already serves.
func (r *Router) buildShardKeyIndex(op *operation, rs *wireclient.ReplicaSet, req shardRequest) error {
	db, coll := splitNS(req.ns)
	key := req.pattern.Spec()
	cmd := bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: key}, {Key: "name", Value: indexcatalog.GenerateName(key)}},
	}}}
	reply, err := r.call(op, rs, db, cmd)
	if err != nil {
		return err
	}
	switch wireclient.ReplyCode(reply) {
	case 0, mongoerr.IndexOptionsConflict, mongoerr.IndexKeySpecsConflict:
		return nil
	}
	return wireclient.MongoError(reply)
}
