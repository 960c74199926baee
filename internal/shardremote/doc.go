// Package shardremote is how a shard member and a config server member
// reach other replica sets of the cluster: the config servers' placement
// reads (config.collections, config.chunks, config.databases, trying each
// member, or linearizably on the primary), a command run on a set's
// primary, and a lost reply told apart from a refusal, so that a caller
// knows when a command's outcome is unknown. It sends through a Runner
// (a wireclient.Client in the server) and knows no migration or cache.
package shardremote
