// Package shardstate is what a shard member knows about the sharded
// cluster it belongs to: its identity (the shardIdentity document addShard
// writes into admin.system.version), its cached routing metadata for each
// database and collection it was asked about, the check of the versions a
// router sends with each command (StaleConfig, StaleDbVersion), and the
// ownership filter that hides orphaned documents from a router's reads.
//
// The metadata comes from the config server replica set named in the
// shardIdentity document, read with internal/wireclient when a router's
// version is newer than the cache (or the cache is empty). Versions,
// routing tables and document shapes are internal/shardmeta's.
package shardstate
