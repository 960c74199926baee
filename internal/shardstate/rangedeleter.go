package shardstate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// backgroundPeriod is how often a primary looks for migrations to
// recover and range deletions that are due.
const backgroundPeriod = 250 * time.Millisecond

// Run recovers the migrations a previous primary left and runs the range
// deletions that are due, while this member is primary, until ctx ends.
func (m *Migrations) Run(ctx context.Context) {
	for clock.Sleep(ctx, m.opts.Clock, backgroundPeriod) {
		if m.checkPrimary() != nil {
			m.forgetLoaded()
			continue
		}
		if _, err := m.opts.State.Identity(); err != nil {
			continue // not a shard yet
		}
		m.loadRecorded()
		if err := m.recoverCoordinators(ctx); err != nil {
			m.opts.Logger.Warn("migration recovery failed; will retry", "err", err)
		}
		if err := m.runRangeDeletions(ctx); err != nil {
			m.opts.Logger.Warn("range deletion failed; will retry", "err", err)
		}
	}
}

// forgetLoaded makes the next primacy read the records again.
func (m *Migrations) forgetLoaded() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loaded = false
}

// recoverCoordinators finishes each recorded migration that no running
// donor of this member owns.
func (m *Migrations) recoverCoordinators(ctx context.Context) error {
	coords, err := m.coordinators()
	if err != nil {
		return err
	}
	for _, rec := range coords {
		if _, running := m.cloneSourceIfAny(rec.ID); running {
			continue
		}
		if err := m.recoverOne(ctx, rec); err != nil {
			return fmt.Errorf("migration %s: %w", rec.ID, err)
		}
	}
	return nil
}

func (m *Migrations) recoverOne(ctx context.Context, rec migrate.Coordinator) error {
	outcome := migrate.OutcomeUnknown
	if rec.Phase == migrate.PhaseCommitStarted {
		outcome = m.outcome(ctx, rec)
	}
	m.opts.Logger.Info("recovering migration", "migration", rec.ID, "phase", rec.Phase, "outcome", outcome)
	switch migrate.Recover(rec.Phase, outcome) {
	case migrate.FinishCommit:
		return m.finishCommit(ctx, rec)
	case migrate.FinishAbort:
		return m.finishAbort(ctx, rec)
	}
	return nil
}

// outcome reads from the config servers who owns the migration's range,
// linearizably: a majority read on whichever member answers could come
// from one behind the commit (a config primary restarted between the
// commit and this read) and turn a committed move into two owners, or an
// aborted one into none.
func (m *Migrations) outcome(ctx context.Context, rec migrate.Coordinator) migrate.Outcome {
	src, err := m.configSource()
	if err != nil {
		return migrate.OutcomeUnknown
	}
	src.Linearizable = true
	coll, chunks, found, err := src.Collection(ctx, rec.Namespace)
	if err != nil || !found {
		return migrate.OutcomeUnknown
	}
	table, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		return migrate.OutcomeUnknown
	}
	switch migrate.OwnerOf(table.Chunks(), rec.Range) {
	case rec.Recipient:
		return migrate.OutcomeRecipientOwns
	case rec.Donor:
		return migrate.OutcomeDonorOwns
	}
	return migrate.OutcomeUnknown
}

func (m *Migrations) cloneSourceIfAny(id string) (*cloneSource, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src, ok := m.sources[id]
	return src, ok
}

// runRangeDeletions runs the tasks whose time has come.
func (m *Migrations) runRangeDeletions(ctx context.Context) error {
	tasks, err := m.rangeDeletions()
	if err != nil {
		return err
	}
	now := m.opts.Clock.Now()
	for _, t := range tasks {
		if t.Pending || now.Before(t.NotBefore.Time()) {
			continue
		}
		m.failPoint(ctx, failpoint.MigrationHangBeforeRangeDeletion)
		pattern, err := shardkey.Parse(t.KeyPattern)
		if err != nil {
			return err
		}
		if err := m.deleteUnowned(ctx, t.Namespace, t.Range, pattern); err != nil {
			return err
		}
		if err := m.deleteRecord(migrate.RangeDeletionsColl, t.ID); err != nil {
			return err
		}
	}
	return nil
}

// deleteBatch bounds the orphans one write of the range deleter
// removes. One write per orphan made a range deletion cost a log sync per
// document.
const deleteBatch = 256

// deleteUnowned deletes the documents of r that this shard does not own
// by the config servers' current chunks: orphans only, whatever task
// asked, so that a stale or repeated task never deletes owned data.
func (m *Migrations) deleteUnowned(ctx context.Context, ns string, r migrate.Range, p *shardkey.Pattern) error {
	db, name, _ := strings.Cut(ns, ".")
	coll := m.opts.Store.Collection(db, name)
	if coll == nil {
		return nil
	}
	table, err := m.opts.State.Refresh(ctx, ns)
	if err != nil {
		return err
	}
	id, err := m.opts.State.Identity()
	if err != nil {
		return err
	}
	owns := func(bson.D) bool { return false }
	if table != nil {
		owns = NewFilter(table, id.ShardName).Owns
	}
	return deleteOrphans(ctx, coll, r, p, owns)
}

// deleteOrphans deletes the documents of r that owns refuses, in writes
// of deleteBatch. Each document is judged again under the write lock as
// it is removed.
func deleteOrphans(ctx context.Context, coll *docstore.Collection, r migrate.Range, p *shardkey.Pattern, owns func(bson.D) bool) error {
	orphan := func(doc bson.D) bool { return inRange(p, r, doc) && !owns(doc) }
	ids := make([]any, 0, deleteBatch)
	flush := func() error {
		err := removeIf(coll, ids, orphan)
		ids = ids[:0]
		return err
	}
	err := eachInRange(ctx, coll, p, r, func(doc bson.D) error {
		if !orphan(doc) {
			return nil
		}
		if ids = append(ids, mustID(doc)); len(ids) == deleteBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// removeIf deletes the documents with ids when remove says so of each
// as it is under the write lock, in one write while they fit: migration
// deletes, which change streams do not see.
func removeIf(coll *docstore.Collection, ids []any, remove func(bson.D) bool) error {
	if len(ids) == 0 {
		return nil
	}
	if err := coll.ApplyFromMigrate(nil, ids, remove); err != nil {
		return fmt.Errorf("shardstate: delete %d orphans of %s: %w", len(ids), coll.Namespace(), err)
	}
	return nil
}
