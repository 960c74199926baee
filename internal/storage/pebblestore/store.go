// Package pebblestore implements storage.Engine on CockroachDB's pebble LSM:
// durable group commit, a background WAL syncer for unsynced commits, and
// fail-stop handling of storage errors (writes refused, reads still served).
// Design notes: docs/design/0002-storage-and-durability.md.
package pebblestore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Options configures Open.
type Options struct {
	// Dir is the data directory (ignored when InMemory).
	Dir string
	// InMemory keeps everything in memory (vfs.NewMem) with no WAL: nothing
	// survives Close, and sync requests are no-ops.
	InMemory bool
	// FS overrides the filesystem, for fault-injection tests.
	FS vfs.FS
	// SyncInterval bounds how long a commit made without sync stays
	// unsynced: a background goroutine syncs the WAL this often if anything
	// was committed unsynced since the last sync. Default 100ms; negative
	// disables the syncer (unsynced commits then reach disk only with a later
	// sync commit, Sync or Close).
	SyncInterval time.Duration
	// CacheSize is the block cache size in bytes; default 64 MiB.
	CacheSize int64
	// Logger receives pebble's messages; default slog.Default().
	Logger *slog.Logger
}

const (
	defaultSyncInterval = 100 * time.Millisecond
	defaultCacheSize    = 64 << 20
	memDir              = "mayfly"
)

// ErrWriteFailed is wrapped by every write refused because the WAL or
// MANIFEST failed earlier. Pebble cannot continue writing after such a
// failure; reopening the store (restarting the server) recovers.
// Its text has no package prefix because it is always wrapped with one.
var ErrWriteFailed = errors.New("writes disabled after a storage failure; reopen to recover")

// Store is a pebble-backed storage.Engine. It is safe for concurrent use.
type Store struct {
	db      *pebble.DB
	inMem   bool
	logger  *slog.Logger
	live    registry
	dirty   atomic.Bool           // committed without sync since the last sync
	failure atomic.Pointer[error] // the first storage failure; writes refused after
	wedged  atomic.Bool           // pebble panicked mid-commit; its pipeline may be stuck

	// mu is held shared by every operation that uses db, and exclusively by
	// Close, so db is never closed under a running call.
	mu     sync.RWMutex
	closed bool

	stopSyncer chan struct{}
	syncerDone chan struct{}
}

var _ storage.Engine = (*Store)(nil)

// Open opens (creating if needed) a store.
func Open(opt Options) (*Store, error) {
	if opt.SyncInterval == 0 {
		opt.SyncInterval = defaultSyncInterval
	}
	if opt.CacheSize <= 0 {
		opt.CacheSize = defaultCacheSize
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	s := &Store{inMem: opt.InMemory, logger: opt.Logger.With("component", "pebblestore")}
	fs, dir, err := s.filesystem(opt)
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opt.CacheSize)
	defer cache.Unref() // pebble holds its own reference while open
	s.db, err = pebble.Open(dir, s.pebbleOptions(fs, cache, opt.FS == nil && !opt.InMemory))
	if err != nil {
		return nil, fmt.Errorf("pebblestore: open %s: %w", dir, err)
	}
	if !s.inMem && opt.SyncInterval > 0 {
		s.stopSyncer, s.syncerDone = make(chan struct{}), make(chan struct{})
		go s.syncLoop(opt.SyncInterval)
	}
	return s, nil
}

func (s *Store) filesystem(opt Options) (vfs.FS, string, error) {
	switch {
	case opt.InMemory:
		return vfs.NewMem(), memDir, nil
	case opt.Dir == "":
		return nil, "", errors.New("pebblestore: open: Options.Dir is required unless InMemory")
	case opt.FS != nil:
		return &watchFS{FS: opt.FS, onFailure: s.fail}, opt.Dir, nil
	}
	return &watchFS{FS: vfs.Default, onFailure: s.fail}, opt.Dir, nil
}

// fail records the first storage failure; from then on writes are refused.
func (s *Store) fail(err error) {
	wrapped := fmt.Errorf("%w: %w", ErrWriteFailed, err)
	if s.failure.CompareAndSwap(nil, &wrapped) {
		s.logger.Error("storage failure: refusing further writes until reopened", "err", err)
	}
}

func (s *Store) writeFailure() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// Get implements storage.Reader.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, storage.ErrClosed
	}
	return get(s.db, key)
}

func get(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebblestore: get: %w", err)
	}
	out := append([]byte{}, v...) // pebble's slice dies with closer
	return out, closer.Close()
}

// NewIter implements storage.Reader.
func (s *Store) NewIter(lower, upper []byte) (storage.Iterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, storage.ErrClosed
	}
	return s.newIter(s.db, lower, upper)
}

// NewSnapshot implements storage.Engine. On a closed store it returns a
// snapshot whose reads fail with storage.ErrClosed.
func (s *Store) NewSnapshot() storage.Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return &snapshot{s: s}
	}
	snap := &snapshot{s: s, ps: s.db.NewSnapshot()}
	if !s.live.add(snap) {
		_ = snap.ps.Close()
		snap.ps = nil
	}
	return snap
}

// NewBatch implements storage.Engine. On a closed store it returns a batch
// whose operations fail with storage.ErrClosed.
func (s *Store) NewBatch() storage.Batch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return &batch{s: s, err: storage.ErrClosed}
	}
	return &batch{s: s, pb: s.db.NewBatch()}
}

// apply commits pb. entered reports whether pebble saw the batch: if so and
// the commit failed, pebble may still reference it, so it must not be
// reused or returned to pebble's pool.
func (s *Store) apply(pb *pebble.Batch, sync bool) (entered bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false, storage.ErrClosed
	}
	if err := s.writeFailure(); err != nil {
		return false, fmt.Errorf("pebblestore: commit: %w", err)
	}
	opts := pebble.NoSync
	if sync && !s.inMem {
		opts = pebble.Sync
	}
	if err := s.pebbleWrite(func() error { return s.db.Apply(pb, opts) }); err != nil {
		return true, fmt.Errorf("pebblestore: commit: %w", err)
	}
	if !sync {
		s.dirty.Store(true)
	}
	return true, nil
}

// pebbleWrite runs a pebble write and turns pebble's ways of reporting an
// unrecoverable failure into an error: a panic (a WAL write error, raised
// while pebble holds its commit mutex) or a Fatalf, after which pebble
// returns success. See the design doc for why these cannot be retried.
func (s *Store) pebbleWrite(write func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.wedged.Store(true)
			s.fail(fmt.Errorf("pebble panicked: %v", r))
			err = s.writeFailure()
		}
	}()
	if err := write(); err != nil {
		return err
	}
	// A failure recorded while the write ran may be the write's own (pebble
	// reports it via Fatalf and returns nil), so the outcome is unknown.
	return s.writeFailure()
}

// Sync implements storage.Engine: it forces a WAL sync, covering every
// commit that returned before the call.
func (s *Store) Sync() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return storage.ErrClosed
	}
	if s.inMem {
		return nil
	}
	if err := s.writeFailure(); err != nil {
		return fmt.Errorf("pebblestore: sync: %w", err)
	}
	// An empty LogData record written with Sync makes pebble fsync the WAL up
	// to and including it, which covers every earlier commit.
	if err := s.pebbleWrite(func() error { return s.db.LogData(nil, pebble.Sync) }); err != nil {
		return fmt.Errorf("pebblestore: sync: %w", err)
	}
	return nil
}

func (s *Store) syncLoop(interval time.Duration) {
	defer close(s.syncerDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopSyncer:
			return
		case <-t.C:
			// Swap before syncing: a commit that sets dirty after the swap
			// is picked up next tick; one that set it before is covered.
			if s.dirty.Swap(false) {
				if err := s.Sync(); err != nil && !errors.Is(err, storage.ErrClosed) {
					s.logger.Error("background WAL sync failed", "err", err)
				}
			}
		}
	}
}

// Metrics implements storage.Engine. In memory, sstables live in RAM, so
// they count towards MemBytes rather than DiskBytes.
func (s *Store) Metrics() storage.Metrics {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return storage.Metrics{}
	}
	m := s.db.Metrics()
	out := storage.Metrics{MemBytes: int64(m.MemTable.Size) + m.BlockCache.Size}
	if s.inMem {
		out.MemBytes += int64(m.DiskSpaceUsage())
	} else {
		out.DiskBytes = int64(m.DiskSpaceUsage())
	}
	return out
}

// Close implements storage.Engine. It stops the syncer, closes iterators
// and snapshots still open (their later calls fail with storage.ErrClosed),
// syncs the WAL and closes pebble. Calls after Close return
// storage.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()

	if s.stopSyncer != nil {
		close(s.stopSyncer)
		<-s.syncerDone
	}
	s.live.closeAll()
	if s.wedged.Load() {
		// pebble.DB.Close takes the commit mutex a panicking commit may have
		// left locked; hanging shutdown would be worse than leaking the
		// handle until the process exits.
		return fmt.Errorf("pebblestore: close: pebble left open after a commit panic: %w", s.writeFailure())
	}
	var errs []error
	if !s.inMem && s.writeFailure() == nil {
		if err := s.pebbleWrite(func() error { return s.db.LogData(nil, pebble.Sync) }); err != nil {
			errs = append(errs, fmt.Errorf("pebblestore: close: sync: %w", err))
		}
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pebblestore: close: %w", err))
	}
	return errors.Join(errs...)
}
