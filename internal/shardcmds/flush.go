package shardcmds

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
)

// flushRoutingTableCacheUpdates reads a collection's placement from the
// config servers into this member's cache, as mongod's
// _flushRoutingTableCacheUpdates: the router sends it to every shard once
// shardCollection committed, so that a shard that cached the name as
// unsharded (and owns none of the new chunks, so that no routed command
// would tell it otherwise) no longer serves a stale router's UNSHARDED
// reads from its empty copy.
func flushRoutingTableCacheUpdates(ctx context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	if s.Shard == nil {
		return nil, NotAShard(c.Name)
	}
	ns, err := c.String(c.Name)
	if err != nil {
		return nil, err
	}
	if _, err := s.Shard.Refresh(ctx, ns); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}
