// Package shardcmds is what a shard member and a config server member
// answer for the routers, the balancer and each other: the internal
// commands of chunk migration (_shardsvrMoveRange, _recvChunk*,
// _migrateClone, _transferMods, ...) and of the config set's commits
// (_configsvr*), the check of the shardVersion and databaseVersion a
// router sends with a routed command, and the cluster role's marks in
// hello and in a replica set config. internal/commands puts its
// commands in the command table; the work itself is internal/shardstate's
// and internal/configsvr's.
package shardcmds

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/configsvr"
	"github.com/mayflydb/mayfly/internal/docmove"
	"github.com/mayflydb/mayfly/internal/shardstate"
)

// Services are a member's parts of a sharded cluster; each is nil where
// the member has no such role, and the commands that need it refuse.
type Services struct {
	// Shard is a shard member's cluster state: its routing metadata and
	// the check of a routed command's versions.
	Shard *shardstate.State
	// Migrations is a shard member's side of chunk migration.
	Migrations *shardstate.Migrations
	// Mover is a shard member's moves of documents whose shard key
	// changed.
	Mover *docmove.Mover
	// ConfigServer is a config server member's commits and balancer.
	ConfigServer *configsvr.Service
}

// HandlerFunc runs one internal command: its arguments in c, the command's
// context in ctx.
type HandlerFunc func(ctx context.Context, s Services, c cmdargs.Call) (bson.D, error)

// Command is one internal command: its handler and whether only a
// primary takes it. Every one runs against the admin database only.
type Command struct {
	Run       HandlerFunc
	OnPrimary bool
}

// Commands are the internal commands of migration and of the config
// set, by name.
func Commands() map[string]Command {
	return map[string]Command{
		"_shardsvrMoveRange":             {Run: shardsvrMoveRange, OnPrimary: true},
		"_recvChunkStart":                {Run: recvChunkStart, OnPrimary: true},
		"_recvChunkStatus":               {Run: byMigrationID(recvChunkStatus)},
		"_recvChunkCommit":               {Run: byMigrationID(recvChunkCommit), OnPrimary: true},
		"_recvChunkReleaseCritSec":       {Run: byMigrationID(recvChunkRelease), OnPrimary: true},
		"_recvChunkAbort":                {Run: byMigrationID(recvChunkAbort), OnPrimary: true},
		"_migrateClone":                  {Run: byMigrationID(numberedPull((*shardstate.Migrations).MigrateClone, cloneAnswer))},
		"_transferMods":                  {Run: byMigrationID(numberedPull((*shardstate.Migrations).TransferMods, modsAnswer))},
		"_getNextSessionMods":            {Run: byMigrationID(numberedPull((*shardstate.Migrations).NextSessionMods, sessionModsAnswer))},
		"_flushRoutingTableCacheUpdates": {Run: flushRoutingTableCacheUpdates, OnPrimary: true},

		"_configsvrCommitChunkMigration": {Run: configsvrCommitChunkMigration, OnPrimary: true},
		"_configsvrCommitChunkSplit":     {Run: configsvrCommitChunkSplit, OnPrimary: true},
		"_configsvrBalancerStatus":       {Run: configsvrBalancerStatus},
	}
}
