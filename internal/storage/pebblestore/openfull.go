package pebblestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// Opening on a full disk. pebble's read-write open writes before it
// returns: it flushes what it replays from the WAL to an sstable, rotates
// the MANIFEST, writes an OPTIONS file and starts a new WAL. On a disk
// without room the flush fails, pebble retries it at once and for ever, and
// Open never returns (a real full disk creates the empty files and fails
// the writes that follow; a fault layer that fails the creates never saw
// it). So the store opens pebble for writing only when the disk has room
// for what opening writes (roomToOpen), and read-only otherwise: that
// replays the WAL in memory and writes nothing, so the server comes up
// serving every acknowledged write and refusing new ones with the disk's
// error. The recoverer reopens it for writing once roomToOpen passes.

// openAtStart opens pebble at Open: for writing where the disk has room,
// read-only where it has not.
func (s *Store) openAtStart() (*pebble.DB, error) {
	if s.inMem {
		return s.openDB()
	}
	if err := s.roomToOpen(); err != nil {
		return s.openReadOnly(err)
	}
	db, err := s.openDB()
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		return s.openReadOnly(err) // the disk filled during the open
	}
	return db, err
}

// openReadOnly opens pebble without writing anything and records why it
// is not writable, so writes are refused with that cause until the
// recoverer reopens it.
func (s *Store) openReadOnly(cause error) (*pebble.DB, error) {
	cache := pebble.NewCache(s.cacheSize)
	defer cache.Unref()
	opts := s.pebbleOptions(s.fs, cache, s.diskHealth)
	opts.ReadOnly = true
	db, err := pebble.Open(s.dir, opts)
	if err != nil {
		return nil, errors.Join(cause, fmt.Errorf("read-only: %w", err))
	}
	s.fail(fmt.Errorf("open: %w", cause))
	return db, nil
}

// roomToOpen returns nil if the disk has room for a read-write open of
// the store, and otherwise why not, wrapping ENOSPC. Room is what the
// filesystem reports free against what opening may write (openNeeds),
// then a probe write, which also meets what the count does not show
// (quotas, a filesystem that reports more than it gives). A directory with
// no store yet needs nothing: pebble's open of a new store fails with the
// disk's error rather than waiting.
func (s *Store) roomToOpen() error {
	names, err := s.fs.List(s.dir)
	if err != nil || !slices.ContainsFunc(names, isManifest) {
		return nil
	}
	need, err := s.openNeeds(names)
	if err != nil {
		return fmt.Errorf("pebblestore: size the open: %w", err)
	}
	if usage, err := s.fs.GetDiskUsage(s.dir); err == nil && usage.AvailBytes < need {
		return fmt.Errorf("%d bytes free, opening for writing needs %d: %w", usage.AvailBytes, need, syscall.ENOSPC)
	}
	if err := s.probe(); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

// openNeeds bounds what a read-write open writes: the WAL files it may
// replay and flush (an sstable holds no more than its WAL records), the
// MANIFEST it rewrites, the OPTIONS file, and the probe's margin for the
// first WAL blocks.
func (s *Store) openNeeds(names []string) (uint64, error) {
	need := uint64(probeSize)
	for _, name := range names {
		if !rewrittenAtOpen(name) {
			continue
		}
		info, err := s.fs.Stat(s.fs.PathJoin(s.dir, name))
		if err != nil {
			return 0, err
		}
		need += uint64(info.Size())
	}
	return need, nil
}

func isManifest(name string) bool { return strings.HasPrefix(name, "MANIFEST-") }

func rewrittenAtOpen(name string) bool {
	return strings.HasSuffix(name, ".log") || isManifest(name) || strings.HasPrefix(name, "OPTIONS-")
}
