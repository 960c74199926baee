package app

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/configsvr"
	"github.com/mayflydb/mayfly/internal/docmove"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/shardstate"
)

// defaultOrphanCleanupDelaySecs is mongod's orphanCleanupDelaySecs: how
// long a donor keeps the range it gave away, for reads that began before
// the commit.
const defaultOrphanCleanupDelaySecs = 900

// migrationWork is what a shard or config server member runs for chunk
// migrations (docs/design/0014, "Migrations").
type migrationWork struct {
	shard        *shardstate.Migrations
	moves        *docmove.Mover
	config       *configsvr.Service
	failPoints   *failpoint.Registry
	cleanupDelay atomic.Int64 // seconds
}

// newMigrationWork sets up a shard's migrations or a config server's
// commits and balancer; nothing for other servers.
func (a *App) newMigrationWork(shard *shardstate.State) error {
	w := &a.migrations
	if testCommands(a.cfg.SetParameters) {
		w.failPoints = failpoint.NewRegistry(uint64(a.cfg.Clock.Now().UnixNano()), failpoint.Names()...)
	}
	self := func() string { return a.srv.Addr().String() }
	switch {
	case shard != nil:
		w.shard = shardstate.NewMigrations(shardstate.MigrationOptions{
			State: shard, Store: a.store, Feed: a.changes.feed, Client: a.configClient, Clock: a.cfg.Clock,
			Logger: a.cfg.Logger, Self: self, IsPrimary: a.backgroundWrites, FailPoints: w.failPoints,
			CleanupDelay: func() time.Duration { return time.Duration(w.cleanupDelay.Load()) * time.Second },
			Barrier:      a.logBarrier,
		})
		w.moves = docmove.New(docmove.Options{Store: a.store, State: shard, Migrations: w.shard, Client: a.configClient,
			Clock: a.cfg.Clock, Logger: a.cfg.Logger})
		// The expiry machinery's changes to orphans are silent
		// (docs/design/0014, "Orphans and expiry").
		a.store.SetOwnership(w.shard)
	case a.cfg.ClusterRole == RoleConfigServer:
		client, err := a.newClusterClient()
		if err != nil {
			return err
		}
		a.configClient = client
		w.config = configsvr.New(configsvr.Options{Store: a.store, Client: client, Clock: a.cfg.Clock,
			Logger: a.cfg.Logger, IsPrimary: a.backgroundWrites, Self: self})
	}
	return nil
}

// logBarrier waits until every write proposed on this member is
// applied; a standalone member's writes are applied when they return.
func (a *App) logBarrier(ctx context.Context) error {
	if a.rs == nil {
		return nil
	}
	return a.rs.Barrier(ctx)
}

// registerMigrationParams adds orphanCleanupDelaySecs.
func (a *App) registerMigrationParams(p *params.Table) {
	w := &a.migrations
	w.cleanupDelay.Store(defaultOrphanCleanupDelaySecs)
	p.Register("orphanCleanupDelaySecs", params.Int(w.cleanupDelay.Load, w.cleanupDelay.Store, 0))
}

// runMigrationWork runs the shard's recovery of migrations and document
// moves and its range deleter, or the config server's balancer, until
// ctx ends.
func (a *App) runMigrationWork(ctx context.Context) {
	switch w := &a.migrations; {
	case w.shard != nil:
		done := make(chan struct{})
		go func() { defer close(done); a.every(ctx, docmove.RecoveryPeriod, func() { w.moves.Recover(ctx) }) }()
		w.shard.Run(ctx)
		<-done
	case w.config != nil:
		w.config.Run(ctx)
	}
}
