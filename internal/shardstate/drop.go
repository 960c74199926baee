package shardstate

import (
	"context"
	"fmt"
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// HoldForDrop readies this shard to drop its copy of ns, after the
// config servers forgot the collection (the router's drop deletes the
// metadata first): it waits out a migration of ns, stops routed commands
// on ns and waits for those in flight, as a critical section does, and
// reads ns's placement again, so that a router still sending the
// dropped incarnation's version is told it is stale instead of
// re-creating the collection here. release lets routed commands in
// again; call it after the drop.
func (m *Migrations) HoldForDrop(ctx context.Context, ns string) (release func(), err error) {
	if err := m.waitNoMigration(ctx, ns); err != nil {
		return nil, err
	}
	release = func() {
		m.leaveCriticalSection(ns)
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.droppingColls, ns)
	}
	if err := m.enterCriticalSection(ctx, ns); err != nil {
		release()
		return nil, err
	}
	if _, err := m.opts.State.Refresh(ctx, ns); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// waitNoMigration waits, at most criticalSectionWait, until no migration
// of ns runs on this shard, then marks ns as being dropped, so that none
// begins (claim) until the drop lets go.
func (m *Migrations) waitNoMigration(ctx context.Context, ns string) error {
	m.loadRecorded()
	deadline := m.opts.Clock.Now().Add(criticalSectionWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.critical[ns] || m.migratingLocked(ns) {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			return mongoerr.Newf(mongoerr.ConflictingOperationInProgress, "a migration of %s is in progress", ns)
		}
		m.waitBriefly()
	}
	m.droppingColls[ns] = true
	return nil
}

// migratingLocked reports whether this shard donates or receives a range
// of ns; m.mu is held.
func (m *Migrations) migratingLocked(ns string) bool {
	if m.donating != nil && m.donating.req.Namespace == ns {
		return true
	}
	for _, rc := range m.receivers {
		if rc.req.Namespace == ns {
			return true
		}
	}
	return false
}

// HoldDatabaseForDrop readies this shard to drop its copy of database
// db, after the config servers forgot it: it stops routed commands on
// every namespace of db and waits for those in flight, then reads db's
// placement again, so that a router still sending the dropped database's
// version is told it is stale instead of re-creating it here. release
// lets routed commands in again; call it after the drop.
func (m *Migrations) HoldDatabaseForDrop(ctx context.Context, db string) (release func(), err error) {
	m.loadRecorded()
	m.mu.Lock()
	m.droppingDBs[db] = true
	m.mu.Unlock()
	release = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.droppingDBs, db)
		m.wakeLocked()
	}
	if err := m.drainDatabase(ctx, db); err != nil {
		release()
		return nil, err
	}
	if err := m.opts.State.RefreshDatabase(ctx, db); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// drainDatabase waits until no routed command on a namespace of db is
// in flight.
func (m *Migrations) drainDatabase(ctx context.Context, db string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.inflightInLocked(db) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shardstate: holding database %s for its drop: %w", db, err)
		}
		m.waitBriefly()
	}
	return nil
}

// inflightInLocked counts the routed commands in flight on db's
// namespaces; m.mu is held.
func (m *Migrations) inflightInLocked(db string) int {
	n := 0
	for ns, k := range m.inflight {
		if d, _, _ := strings.Cut(ns, "."); d == db {
			n += k
		}
	}
	return n
}
