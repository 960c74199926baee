package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmerge"
)

// cmdDBStats answers dbStats as mongos, from every shard's
// (shardmerge.MergeDBStats).
func cmdDBStats(r *Router, op *operation) (bson.D, error) {
	shards, replies, err := r.eachShard(op, op.db, passThrough(op.body))
	if err != nil {
		return nil, err
	}
	hosts := make([]string, len(shards))
	for i, s := range shards {
		hosts[i], replies[i] = s.Host, forwardable(replies[i])
	}
	return shardmerge.MergeDBStats(op.db, hosts, replies), nil
}
