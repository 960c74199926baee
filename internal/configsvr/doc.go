// Package configsvr is what a config server member does for migrations:
// it commits a migration's or a split's new config.chunks in one
// transaction, and, on the primary, runs the balancer, which splits and
// moves chunks until every shard holds its share and drains shards being
// removed. Placement decisions are internal/migrate's; the moves
// themselves are run by the donor shard (internal/shardstate).
package configsvr
