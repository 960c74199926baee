package pebblestore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Recovery. pebble cannot write again after its WAL or MANIFEST failed, so
// the store recovers the only way pebble allows, by reopening: every
// RecoverInterval a background goroutine checks whether the store has
// failed, probes the disk, and if the probe's writes succeed closes the
// failed DB and opens it again in place. The reopen replays the WAL, so
// every write acknowledged as durable is there; writes committed without
// sync whose WAL write failed are not (as after a crash), which is why
// OnReopen callbacks then rebuild what upper layers cache.
//
// A store wedged by a pebble panic is left alone: the panicking commit may
// hold pebble's commit mutex, so the old DB cannot be closed, and abandoning
// it open is unsafe because its flushes and compactions would keep writing
// the MANIFEST and deleting files under the new DB. Only a restart recovers.

const (
	// probeFile is written and removed in the data directory to learn
	// whether the disk takes writes again.
	probeFile = "mayfly-space-probe"
	// probeSize is what the probe writes and syncs: room for WAL blocks and
	// a start on the flush pebble makes when it reopens. Passing promises no
	// more than that, but failing spares closing a DB that could not be
	// opened again.
	probeSize = 1 << 20
	// lockWait bounds how long one attempt waits for running calls to leave
	// the store before trying again at the next interval.
	lockWait = time.Second
	// recoverLogEvery: a failed attempt is logged the first time and then
	// every this many, so a long outage does not flood the log.
	recoverLogEvery = 60
)

var errBusy = errors.New("pebblestore: recover: calls still running in the store")

func (s *Store) recoverLoop(interval time.Duration) {
	defer s.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	failed := 0 // attempts since the failure
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			failed = s.recoverTick(failed)
		}
	}
}

// recoverTick makes one recovery attempt if the store has failed and
// returns how many attempts have failed since the failure.
func (s *Store) recoverTick(failed int) int {
	cause := s.writeFailure()
	switch {
	case cause == nil:
		return 0
	case s.wedged.Load():
		if failed == 0 {
			s.logger.Error("storage failure inside pebble's commit pipeline: the store cannot reopen in place; restart the server to recover", "err", cause)
		}
		return failed + 1
	}
	start := time.Now()
	err := s.tryRecover()
	switch {
	case err == nil:
		s.logger.Warn("storage recovered: store reopened, writes accepted again",
			"attempts", failed+1, "took", time.Since(start), "cause", cause)
		s.runHooks()
		return 0
	case errors.Is(err, storage.ErrClosed):
		return failed
	}
	failed++
	if failed == 1 || failed%recoverLogEvery == 0 {
		s.logger.Error("storage recovery attempt failed; writes still refused", "attempt", failed, "err", err)
	}
	return failed
}

// tryRecover probes the disk and, if it takes writes, reopens pebble.
func (s *Store) tryRecover() error {
	if err := s.roomToOpen(); err != nil {
		return fmt.Errorf("pebblestore: recover: no room to reopen: %w", err)
	}
	if err := s.lockForReopen(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.closed {
		return storage.ErrClosed
	}
	return s.reopenLocked()
}

// probe writes and syncs probeSize random bytes (zeros could be compressed
// or deduplicated away) to a scratch file through the store's filesystem,
// then removes it.
func (s *Store) probe() error {
	name := s.fs.PathJoin(s.dir, probeFile)
	f, err := s.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create probe: %w", err)
	}
	buf := make([]byte, probeSize)
	_, _ = rand.Read(buf) // never fails
	_, werr := f.Write(buf)
	if werr == nil {
		werr = f.Sync()
	}
	return errors.Join(werr, f.Close(), s.fs.Remove(name))
}

// lockForReopen takes s.mu exclusively, giving up after lockWait (errBusy)
// or at Close (storage.ErrClosed). It polls TryLock instead of calling
// Lock: a waiting Lock would block every new reader behind a call that may
// itself be stuck in pebble (a commit stalled on the full disk), and reads
// must keep working while the store is failed.
func (s *Store) lockForReopen() error {
	deadline := time.Now().Add(lockWait)
	for !s.mu.TryLock() {
		if time.Now().After(deadline) {
			return errBusy
		}
		select {
		case <-s.stop:
			return storage.ErrClosed
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// reopenLocked replaces the failed pebble DB with a freshly opened one. It
// runs with s.mu held exclusively, so no call is using the DB.
func (s *Store) reopenLocked() (err error) {
	defer func() {
		// pebble's state after a panic here is unknown: stop reopening.
		if r := recover(); r != nil {
			s.wedged.Store(true)
			err = fmt.Errorf("pebblestore: recover: pebble panicked: %v", r)
		}
	}()
	if s.db != nil {
		// Iterators and snapshots read pebble's memory; release them first.
		s.live.invalidateAll(storage.ErrInvalidated)
		s.dropDurable()
		if err := s.db.Close(); err != nil {
			// Expected: the WAL writer still holds the error it failed with.
			s.logger.Info("closed the failed pebble DB before reopening", "err", err)
		}
		s.db = nil
		s.gen++
	}
	// The reopen may drop unsynced writes the resident cache holds.
	s.resetResident()
	// Cleared before opening, while no call runs: a failure recorded from
	// here on is the new DB's (or the reopen's own) and must stand.
	s.failure.Store(nil)
	db, err := s.openDB()
	if err != nil {
		s.fail(fmt.Errorf("reopen: %w", err))
		return fmt.Errorf("pebblestore: recover: reopen %s: %w", s.dir, err)
	}
	s.db = db
	s.dirty.Store(false)
	// The reopen dropped the touches the cache held back unlogged.
	if err := s.repairLocked(db); err != nil {
		s.fail(fmt.Errorf("reopen: %w", err))
		return err
	}
	return nil
}

// runHooks calls the OnReopen callbacks, with no store lock held.
func (s *Store) runHooks() {
	s.hooksMu.Lock()
	hooks := append([]func(){}, s.hooks...)
	s.hooksMu.Unlock()
	for _, f := range hooks {
		f()
	}
}
