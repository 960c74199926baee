package shardstate

import (
	"context"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// HoldForMove holds ns for document move id (internal/docmove): it waits
// out a migration's critical section and any other move, stops new
// routed commands on ns and waits for those in flight. The move counts
// in flight itself, so a migration entering its critical section waits
// for it. release(keep) ends the move's count; keep leaves ns held (the
// move's record is still there, its new owner did not answer) until a
// later hold of the same id, the recovery's, is released without keep.
// A new primary takes up the holds of the recorded moves (loadRecorded).
func (m *Migrations) HoldForMove(ctx context.Context, ns, id string) (release func(keep bool), err error) {
	m.loadRecorded()
	deadline := m.opts.Clock.Now().Add(criticalSectionWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.critical[ns] || (m.moving[ns] != "" && m.moving[ns] != id) {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			return nil, mongoerr.Newf(mongoerr.LockBusy, "%s is busy with a migration or another document move", ns)
		}
		m.waitBriefly()
	}
	m.moving[ns] = id
	m.held[id] = ns
	m.inflight[ns]++
	for m.inflight[ns] > 1 {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			m.endMoveLocked(ns, id, false)
			return nil, mongoerr.Newf(mongoerr.LockBusy, "%s: routed commands still running after %s", ns, criticalSectionWait)
		}
		m.waitBriefly()
	}
	return func(keep bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.endMoveLocked(ns, id, keep)
	}, nil
}

// endMoveLocked ends move id's count in flight on ns and, unless keep,
// its hold; m.mu is held.
func (m *Migrations) endMoveLocked(ns, id string, keep bool) {
	m.inflight[ns]--
	delete(m.held, id)
	if !keep && m.moving[ns] == id {
		delete(m.moving, ns)
	}
	m.wakeLocked()
}
