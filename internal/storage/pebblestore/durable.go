package pebblestore

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// The durable view. pebble makes a batch visible as soon as it is applied,
// before the WAL write and sync that make it durable; when either fails,
// the write is answered with an error yet reads would see it until the
// recovery reopen drops it (the reopen replays only what reached the WAL).
//
// So a durable commit takes a guard, a pebble snapshot of the state just
// before its apply, and keeps it until pebble reports its own WAL sync
// done. When its apply or its sync fails, the oldest such guard becomes
// the view that reads use until the reopen: it shows none of the writes
// that failed. Durable commits take their guard and apply in one order
// (orderMu), which is their order in the WAL, and a WAL that failed once
// fails every later sync; so every write acknowledged as durable was
// applied before the oldest failed guard and is in the view.
//
// An unsynced commit takes none. pebble publishes a batch (makes it
// visible) only after its WAL write and memtable apply succeed, and a
// failure of either fails the commit unpublished, so an unsynced write
// that failed was never visible. What it may still be answered with is a
// failure another write recorded while it applied: it is then visible
// until the reopen, which may keep or drop it, like a crash, as it may
// any unsynced write acknowledged before the view. A guard cost every
// unsynced write a snapshot, whose close re-ran pebble's compaction
// picker under the DB's mutex: 3 % of the session workload's CPU.
//
// Guards live only while a write is in flight. An earlier design kept a
// snapshot of the last synced state open at all times, which pinned
// deleted keys in every flush and compaction and cost expiry a third of
// its speed (docs/design/0006, "What the durable view costs").
type durableView struct {
	orderMu  sync.Mutex     // a durable commit's guard and apply, in one order
	inflight sync.WaitGroup // durable commits' sync waiters, which Close awaits

	// mu is never held across a call into pebble: pebble reports a
	// failure (Store.fail, which takes mu) while it holds its own DB
	// mutex, which snapshots take and release.
	mu   sync.Mutex
	next uint64 // numbers guards in the order they were taken
	// view is what reads use once the store has failed: the oldest guard of
	// a write that failed, nil until one did. Views it replaced stay open in
	// retired (a reader may hold one) until the reopen or Close.
	view    *guard
	retired []*guard
}

// guard is the state before one commit's apply.
type guard struct {
	n    uint64
	snap *pebble.Snapshot
}

// takeGuard snapshots db before a commit applies. Its caller holds
// orderMu, so guards are numbered in the order their snapshots were taken.
func (s *Store) takeGuard(db *pebble.DB) *guard {
	g := &guard{snap: db.NewSnapshot()}
	d := &s.durable
	d.mu.Lock()
	g.n = d.next
	d.next++
	d.mu.Unlock()
	return g
}

// release drops the guard of a write that succeeded: an unsynced commit's
// after its apply, a durable commit's after its sync.
func (s *Store) release(g *guard) { _ = g.snap.Close() }

// installView makes the guard of a write that failed the view reads use,
// unless the view is older already.
func (s *Store) installView(failed *guard) {
	d := &s.durable
	d.mu.Lock()
	kept := true
	switch {
	case d.view == nil:
		d.view = failed
	case failed.n < d.view.n:
		d.retired = append(d.retired, d.view)
		d.view = failed
	default:
		kept = false
	}
	d.mu.Unlock()
	if !kept {
		_ = failed.snap.Close()
	}
}

// dropDurable closes the view and those it replaced; s.mu is held
// exclusively (a reopen or Close), so no reader uses them.
func (s *Store) dropDurable() {
	d := &s.durable
	d.mu.Lock()
	drop := d.retired
	if d.view != nil {
		drop = append(drop, d.view)
	}
	d.view, d.retired = nil, nil
	d.mu.Unlock()
	for _, g := range drop {
		_ = g.snap.Close()
	}
}

// reader is what reads use: the DB, or the durable view once a write has
// failed. s.mu is held shared.
func (s *Store) reader(db *pebble.DB) (r pebble.Reader, durable *pebble.Snapshot) {
	if s.failure.Load() == nil {
		return db, nil
	}
	s.durable.mu.Lock()
	defer s.durable.mu.Unlock()
	if s.durable.view == nil {
		return db, nil
	}
	return s.durable.view.snap, s.durable.view.snap
}
