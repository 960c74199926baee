package pebblestore

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// openFull is Open's answer to a disk too full to open pebble for writing
// (opening writes a new WAL and MANIFEST): it opens pebble read-only, which
// replays the WAL in memory and writes nothing, and records the failure,
// so the server comes up serving reads and refusing writes with the disk's
// error; the recoverer reopens pebble for writing once the disk takes
// writes again. Any other failure to open is returned as it was.
func (s *Store) openFull(openErr error) (*pebble.DB, error) {
	if s.inMem || !errors.Is(openErr, syscall.ENOSPC) {
		return nil, openErr
	}
	cache := pebble.NewCache(s.cacheSize)
	defer cache.Unref()
	opts := s.pebbleOptions(s.fs, cache, s.diskHealth)
	opts.ReadOnly = true
	db, err := pebble.Open(s.dir, opts)
	if err != nil {
		return nil, errors.Join(openErr, fmt.Errorf("read-only: %w", err))
	}
	s.fail(fmt.Errorf("open: %w", openErr))
	return db, nil
}
