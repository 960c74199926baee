package shardstate

import (
	"context"

	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// Source reads the routing metadata of the cluster: what a shard's cache
// is refreshed from.
type Source interface {
	// Collection returns ns's config.collections document and its chunks;
	// found is false for a collection the cluster does not track as
	// sharded.
	Collection(ctx context.Context, ns string) (coll shardmeta.Collection, chunks []shardmeta.Chunk, found bool, err error)
	// Database returns db's config.databases document; found is false
	// when the cluster has no such database.
	Database(ctx context.Context, db string) (shardmeta.Database, bool, error)
}

// Runner runs a command on a host (internal/shardremote).
type Runner = shardremote.Runner

var _ Source = shardremote.ConfigSource{}
