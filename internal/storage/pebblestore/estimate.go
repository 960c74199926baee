package pebblestore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/storage"
)

var (
	_ storage.SizeEstimator = (*Store)(nil)
	_ storage.Checkpointer  = (*Store)(nil)
)

// EstimateDiskUsage implements storage.SizeEstimator: pebble's estimate of
// the sstable bytes that hold keys in [lower, upper).
func (s *Store) EstimateDiskUsage(lower, upper []byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return 0, err
	}
	return db.EstimateDiskUsage(lower, upper)
}

// Checkpoint implements storage.Checkpointer with pebble's checkpoint:
// hard links to the sstables and a copy of the WAL, taken with the WAL
// flushed first so that every write acknowledged before the call is in it.
func (s *Store) Checkpoint(dir string) error {
	if s.inMem {
		return fmt.Errorf("pebblestore: checkpoint: an in-memory store has nothing on disk to copy")
	}
	s.flushBefore(nil, nil) // a copy opened by anything but Open would miss the patches
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return err
	}
	if err := db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebblestore: checkpoint to %s: %w", dir, err)
	}
	return nil
}
