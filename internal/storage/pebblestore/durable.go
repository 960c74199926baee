package pebblestore

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// The durable view. pebble makes a batch visible as soon as it is applied,
// before the WAL sync that makes it durable; when that sync fails, the
// write was answered with an error yet reads would see it until the
// recovery reopen drops it (the reopen replays only what reached the WAL).
// So the store keeps a pebble snapshot of the state the last successful
// sync covers, and once a write has failed, reads go to that snapshot
// until the reopen: a write answered with an error is not read back, and
// neither are unjournaled writes that the reopen will drop. Writes
// acknowledged as durable are all in the snapshot.
//
// The snapshot is taken before each sync (everything visible then is in
// the WAL ahead of the sync record, so the sync covers it) and replaced
// only while the store has not failed; fail takes the same lock, so once
// a reader has seen the failure the snapshot it finds stays open until
// the reopen or Close, which hold s.mu exclusively.
type durableView struct {
	mu   sync.Mutex
	snap *pebble.Snapshot
}

// set makes snap the durable view if the store has not failed, closing the
// view it replaces; otherwise it closes snap.
func (s *Store) setDurable(snap *pebble.Snapshot) {
	s.durable.mu.Lock()
	defer s.durable.mu.Unlock()
	if s.failure.Load() != nil {
		_ = snap.Close()
		return
	}
	old := s.durable.snap
	s.durable.snap = snap
	if old != nil {
		_ = old.Close()
	}
}

// dropDurable closes the durable view; s.mu is held exclusively (a reopen
// or Close), so no reader uses it.
func (s *Store) dropDurable() {
	s.durable.mu.Lock()
	defer s.durable.mu.Unlock()
	if s.durable.snap != nil {
		_ = s.durable.snap.Close()
		s.durable.snap = nil
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
	if s.durable.snap == nil {
		return db, nil
	}
	return s.durable.snap, s.durable.snap
}

// syncCovered syncs the WAL and, on success, makes the state before the
// sync the durable view.
func (s *Store) syncCovered(db *pebble.DB) error {
	snap := db.NewSnapshot()
	if err := s.syncDB(db); err != nil {
		_ = snap.Close()
		return err
	}
	s.setDurable(snap)
	return nil
}
