// Package shardkey knows a sharded collection's shard key: it parses a key
// pattern ({k: "hashed"}, {a: 1, b: 1}) with mongod's rules and messages,
// extracts a document's shard key value (dotted paths, a missing field as
// null, arrays refused with ShardKeyNotFound), and computes MongoDB's exact
// hashed value, so that chunk bounds, convertShardKeyToHashed and
// sh.status() agree with a MongoDB cluster. It decides nothing about
// placement: that is the routing table's job (internal/shardmeta).
package shardkey
