// Package shardmeta is the config server's sharding metadata as MongoDB
// 8.0 shapes it — config.shards, config.databases, config.collections,
// config.chunks, config.version, config.settings, config.changelog and
// config.mongos as Go types that encode to and decode from those
// documents — and the routing table a router builds from one collection's
// chunks: which chunk and shard own a shard key value, which shards a key
// range or a whole-collection scan touches, and the collection and shard
// versions with MongoDB's rules for comparing them. It also lays out the
// first chunks of a collection sharded on a hashed key, as 8.0 does.
//
// It reads and writes nothing: the config server stores these documents
// in ordinary collections, and the router holds routing tables in memory.
package shardmeta
