// Package shardmerge splits a query or pipeline into the part each shard
// runs and the part the router runs, and merges the shards' results.
//
// It is pure: the router sends the shard parts, wraps each shard's
// cursor (first batch, then getMores) as an aggregate.Iterator, and hands
// those streams to a merger here. The rules follow mongod's router
// (cluster_find's transformQueryForShards, the pipeline's
// distributedPlanLogic, cluster_count/distinct, cluster_explain); the
// design note is docs/design/0014-sharding.md, "Splitting and merging".
package shardmerge
