package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// cmdFsync is mongos's fsync: the config servers' primary and every
// shard's flush to disk, their replies under all.raw. With lock each
// also holds its writes for a backup (forBackup, as mongos asks), and a
// lock that fails anywhere is released everywhere.
func cmdFsync(r *Router, op *operation) (bson.D, error) {
	cmd := passThrough(op.body)
	lock := bsonutil.TrueValue(mustField(op.body, "lock"))
	if lock {
		cmd = bsonutil.WithField(cmd, "forBackup", true)
	}
	raw, err := r.configAndShards(op, cmd)
	if err != nil && lock {
		_, _ = r.configAndShards(op, bson.D{{Key: "fsyncUnlock", Value: int32(1)}})
	}
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "numFiles", Value: int32(1)}, {Key: "all", Value: raw}}, nil
}

// cmdFsyncUnlock releases fsync's lock on the config servers' primary
// and every shard's, as mongos.
func cmdFsyncUnlock(r *Router, op *operation) (bson.D, error) {
	return r.configAndShards(op, bson.D{{Key: "fsyncUnlock", Value: int32(1)}})
}

// configAndShards sends cmd on admin to the config servers' primary,
// then to every shard's at once, and answers their replies under raw by
// connection string, as mongos's appendRawResponses; the first error is
// the error.
func (r *Router) configAndShards(op *operation, cmd bson.D) (bson.D, error) {
	reply, err := r.call(op, r.config, "admin", append(bson.D(nil), cmd...))
	if err == nil {
		err = wireclient.MongoError(reply)
	}
	if err != nil {
		return nil, err
	}
	shards, replies, err := r.eachShard(op, "admin", cmd)
	if err != nil {
		return nil, err
	}
	raw := bson.D{{Key: r.cfg.ConfigDB, Value: forwardable(reply)}}
	for i, s := range shards {
		raw = append(raw, bson.E{Key: s.Host, Value: forwardable(replies[i])})
	}
	return bson.D{{Key: "raw", Value: raw}}, nil
}
