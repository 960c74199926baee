// Package router routes MongoDB commands from clients to the shards that
// own the data, as mongos: it answers the handshake as a router, keeps
// the cluster's metadata on the config server replica set (config.shards,
// config.databases, config.collections, config.chunks, ...), targets each
// command by the routing table of its collection, sends it to the
// primaries of the owning shards with their shard version, merges their
// replies and owns the cursors it hands to clients.
//
// It implements internal/server's Handler, so the wire front end is the
// server's. Every call to a config server or a shard goes through
// internal/wireclient; metadata documents are internal/shardmeta's and
// shard key hashing is internal/shardkey's. It holds no data of its own:
// several routers can serve one cluster.
package router
