// Package pebblestore implements storage.Engine on CockroachDB's pebble LSM:
// durable group commit, a background WAL syncer for unsynced commits, and
// fail-stop handling of storage errors (writes refused, reads still served)
// with automatic recovery once the disk takes writes again.
// Design notes: docs/design/0002-storage-and-durability.md.
package pebblestore

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
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
	// Yield is what a flush's or a compaction's writer calls before each
	// write (yieldFS), and a warm-up between chunks; default
	// runtime.Gosched. A server passes a bgyield.Yielder's.
	Yield func()
	// SyncInterval bounds how long a commit made without sync stays
	// unsynced: a background goroutine syncs the WAL this often if anything
	// was committed unsynced since the last sync. Default 100ms; negative
	// disables the syncer (unsynced commits then reach disk only with a later
	// sync commit, Sync or Close).
	SyncInterval time.Duration
	// CacheSize is the block cache size in bytes; default 64 MiB.
	CacheSize int64
	// RecoverInterval is how often a store whose writes failed (disk full,
	// I/O error on the WAL or MANIFEST) checks whether the disk takes writes
	// again and, if it does, reopens pebble in place. Default 1s; negative
	// disables automatic recovery (closing and opening the store by hand
	// still recovers). Ignored in memory, where a reopen would lose
	// everything.
	RecoverInterval time.Duration
	// CPUs is the number of cores the server runs on, which sets how many
	// compactions may run at once; default GOMAXPROCS.
	CPUs int
	// Logger receives pebble's messages; default slog.Default().
	Logger *slog.Logger
	// Resident, when set, is the cache in front of pebble: point reads
	// and small equality ranges are served from it, and every commit
	// keeps it exact (resident.go).
	Resident *rescache.Cache
	// WriteBehind, when positive with a Resident cache on a store that
	// is not Replicated, holds back document writes that change a few
	// bytes of a cached document (a touch), flushing them this often
	// (behind.go).
	WriteBehind time.Duration
	// Replicated marks a replica-set member's store, which holds the raft
	// log beside the data: its L0 compacts at every flush
	// (l0CompactionThresholdReplicated), where a standalone store's waits
	// for four sublevels (docs/design/0002, "Pebble tuning").
	Replicated bool
	// PinHold is how long the store keeps an LSM version pinned after a
	// compaction replaced it (pin.go); default defaultPinHold.
	PinHold time.Duration
}

const (
	defaultSyncInterval    = 100 * time.Millisecond
	defaultRecoverInterval = time.Second
	defaultCacheSize       = 64 << 20
	memDir                 = "mayfly"
)

// Store is a pebble-backed storage.Engine. It is safe for concurrent use.
type Store struct {
	inMem   bool
	logger  *slog.Logger
	repeats *throttledLog // storage errors that repeat, logged with a count
	live    registry
	dirty   atomic.Bool           // committed without sync since the last sync
	failure atomic.Pointer[error] // the first storage failure; writes refused after
	durable durableView           // what reads see once a write failed (durable.go)
	wedged  atomic.Bool           // pebble panicked mid-commit; its pipeline may be stuck
	stalls  atomic.Int64          // write stalls begun, for metrics
	// resident is Options.Resident, or nil; commits counts the commits
	// under way for its value filters (inflight.go).
	resident *rescache.Cache
	commits  commitEpochs
	behind   *behind // nil: every write goes to pebble at once
	// touchLog: storage holds touchMark; touchOwed: it held it at open
	// and the repair has not run since (touchlog.go).
	touchLog, touchOwed atomic.Bool
	// repair is the registered storage.TouchRepair, nil before one is.
	repair atomic.Pointer[storage.TouchRepair]

	// What opening pebble again in place needs.
	fs         vfs.FS
	dir        string
	cacheSize  int64
	cpus       int
	diskHealth bool
	l0Compact  int // pebble's L0CompactionThreshold

	// mu is held shared by every operation that uses db, and exclusively by
	// Close and by a recovery reopen, so db is never closed or replaced
	// under a running call.
	mu     sync.RWMutex
	db     *pebble.DB // nil when a recovery closed it and could not open it again
	gen    uint64     // counts reopens; a batch remembers the one it was made in
	closed bool

	hooksMu sync.Mutex
	hooks   []func() // OnReopen callbacks

	yield func() // Options.Yield
	// installed signals the pin loop that pebble installed a new version,
	// tablesReplaced counts those that removed tables, pinsTaken the
	// versions the loop pinned and pinsClosed the pins closed since;
	// releases queues the pins it let go for the release loop (pin.go).
	installed      chan struct{}
	releases       chan storage.Iterator
	tablesReplaced atomic.Int64
	pinsTaken      atomic.Int64
	pinsClosed     atomic.Int64
	pinHold        time.Duration
	stop           chan struct{}  // closed by Close: background goroutines exit
	bg             sync.WaitGroup // the background loops (startBackground) and warm-ups (warm.go)
}

var _ storage.Engine = (*Store)(nil)

// Open opens (creating if needed) a store.
func Open(opt Options) (*Store, error) {
	opt = withDefaults(opt)
	returnFreedMemTables()
	s := &Store{
		inMem: opt.InMemory, cacheSize: opt.CacheSize, cpus: opt.CPUs, diskHealth: opt.FS == nil && !opt.InMemory,
		logger: opt.Logger.With("component", "pebblestore"), stop: make(chan struct{}),
		resident: opt.Resident, yield: opt.Yield, l0Compact: l0CompactionThreshold,
		behind: newBehind(opt), installed: make(chan struct{}, 1), pinHold: opt.PinHold,
		releases: make(chan storage.Iterator, releaseBacklog),
	}
	if opt.Replicated {
		s.l0Compact = l0CompactionThresholdReplicated
	}
	s.repeats = newThrottledLog(s.logger, time.Now)
	fs, dir, err := s.filesystem(opt)
	if err != nil {
		return nil, err
	}
	s.fs, s.dir = fs, dir
	if s.db, err = s.openAtStart(); err != nil {
		return nil, fmt.Errorf("pebblestore: open %s: %w", dir, err)
	}
	s.startBackground(opt)
	return s, nil
}

func withDefaults(opt Options) Options {
	if opt.SyncInterval == 0 {
		opt.SyncInterval = defaultSyncInterval
	}
	if opt.PinHold <= 0 {
		opt.PinHold = defaultPinHold
	}
	if opt.RecoverInterval == 0 {
		opt.RecoverInterval = defaultRecoverInterval
	}
	if opt.CacheSize <= 0 {
		opt.CacheSize = defaultCacheSize
	}
	if opt.CPUs <= 0 {
		opt.CPUs = runtime.GOMAXPROCS(0)
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Yield == nil {
		opt.Yield = runtime.Gosched
	}
	return opt
}

// openDB opens pebble on the store's directory, at Open and at every
// recovery reopen.
func (s *Store) openDB() (*pebble.DB, error) {
	cache := pebble.NewCache(s.cacheSize)
	defer cache.Unref() // pebble holds its own reference while open
	db, err := pebble.Open(s.dir, s.pebbleOptions(s.fs, cache, s.diskHealth))
	if err != nil {
		return nil, err
	}
	if err := replayPatches(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("replay the write-behind log: %w", err)
	}
	if err := s.readTouchMark(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("read the write-behind's mark: %w", err)
	}
	return db, nil
}

// startBackground starts the write-behind's flusher, the version pins and
// their releases, the WAL syncer and the recoverer. In memory there is no
// WAL to sync, and nothing a reopen could bring back.
func (s *Store) startBackground(opt Options) {
	if s.behind != nil {
		s.bg.Add(1)
		go s.behindLoop()
	}
	s.bg.Add(2)
	go s.pinLoop()
	go s.releaseLoop()
	if s.inMem {
		return
	}
	if opt.SyncInterval > 0 {
		s.bg.Add(1)
		go s.syncLoop(opt.SyncInterval)
	}
	if opt.RecoverInterval > 0 {
		s.bg.Add(1)
		go s.recoverLoop(opt.RecoverInterval)
	}
}

func (s *Store) filesystem(opt Options) (vfs.FS, string, error) {
	yield := s.yield
	switch {
	case opt.InMemory:
		return yieldFS{FS: vfs.NewMem(), yield: yield}, memDir, nil
	case opt.Dir == "":
		return nil, "", errors.New("pebblestore: open: Options.Dir is required unless InMemory")
	}
	fs := cmp.Or(opt.FS, vfs.Default)
	return yieldFS{FS: &watchFS{FS: fs, onFailure: s.fail}, yield: yield}, opt.Dir, nil
}

// fail records the first storage failure; from then on writes are refused
// until a recovery reopens pebble.
func (s *Store) fail(err error) {
	wrapped := fmt.Errorf("%w: %w", storage.ErrWriteFailed, err)
	s.durable.mu.Lock()
	first := s.failure.CompareAndSwap(nil, &wrapped)
	s.durable.mu.Unlock()
	if first {
		s.logger.Error("storage failure: refusing writes until the store recovers", "err", err)
	}
}

// Writable reports whether the store takes writes: false from a failure
// (a full disk, an open on one) until the recovery reopen.
func (s *Store) Writable() bool { return s.writeFailure() == nil }

func (s *Store) writeFailure() error {
	if p := s.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// dbLocked returns the pebble DB for a call holding s.mu, or why there is
// none.
func (s *Store) dbLocked() (*pebble.DB, error) {
	switch {
	case s.closed:
		return nil, storage.ErrClosed
	case s.db == nil:
		// A recovery closed the failed DB and could not open it again yet;
		// the failure it recorded says why (it is never nil here).
		return nil, fmt.Errorf("pebblestore: unavailable until the store recovers: %w", s.writeFailure())
	}
	return s.db, nil
}

// Get implements storage.Reader.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, cached, err := s.pointReaderLocked(key)
	switch {
	case err != nil:
		return nil, err
	case cached:
		return s.residentGet(r, key)
	}
	return get(r, key)
}

// AppendGet implements storage.AppendGetter: Get, the value appended to
// dst.
func (s *Store) AppendGet(dst, key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, cached, err := s.pointReaderLocked(key)
	switch {
	case err != nil:
		return nil, err
	case cached:
		return s.residentAppendGet(r, dst, key)
	}
	return appendGet(r, dst, key)
}

// pointReaderLocked is what a read of key reads, and whether through the
// resident cache: not when the store reads its durable view after a
// failed write, nor for a key the cache does not admit. s.mu is held.
func (s *Store) pointReaderLocked(key []byte) (r pebble.Reader, cached bool, err error) {
	db, err := s.dbLocked()
	if err != nil {
		return nil, false, err
	}
	r, durable := s.reader(db)
	return r, s.resident != nil && durable == nil && s.resident.Admits(key), nil
}

func get(r pebble.Reader, key []byte) ([]byte, error) {
	return appendGet(r, []byte{}, key)
}

// appendGet appends the value at key to dst: pebble's slice dies with
// its closer.
func appendGet(r pebble.Reader, dst, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebblestore: get: %w", err)
	}
	out := append(dst, v...)
	return out, closer.Close()
}

// NewIter implements storage.Reader.
func (s *Store) NewIter(lower, upper []byte) (storage.Iterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return nil, err
	}
	r, durable := s.reader(db)
	if s.resident == nil || durable != nil || !s.resident.Cacheable(lower, upper) {
		it, err := s.newIter(r, lower, upper)
		if err != nil || durable != nil {
			return it, err
		}
		return s.withPending(it, lower, upper), nil
	}
	return s.residentIter(r, lower, upper)
}

// NewSnapshot implements storage.Engine. On a closed store it returns a
// snapshot whose reads fail with storage.ErrClosed (with the failure while
// a recovery has pebble closed).
func (s *Store) NewSnapshot() storage.Snapshot {
	s.flushBefore(nil, nil)
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return &snapshot{s: s, err: err}
	}
	snap := &snapshot{s: s}
	if _, durable := s.reader(db); durable != nil {
		snap.ps, snap.borrowed = durable, true
	} else {
		snap.ps = db.NewSnapshot()
	}
	if !s.live.add(snap) {
		snap.release()
		snap.ps, snap.err = nil, storage.ErrClosed
	}
	return snap
}

// NewBatch implements storage.Engine. On a closed store it returns a batch
// whose operations fail with storage.ErrClosed (with the failure while a
// recovery has pebble closed).
func (s *Store) NewBatch() storage.Batch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return &batch{s: s, err: err}
	}
	return &batch{s: s, pb: db.NewBatch(), gen: s.gen}
}

// apply commits b: unsynced, or durably in two steps, returning the wait
// for its sync. entered reports whether pebble saw the batch: if so and
// the commit failed, pebble may still reference it, so it must not be
// reused or returned to pebble's pool.
func (s *Store) apply(b *batch, durable bool) (wait func() error, entered bool, err error) {
	if s.behind != nil {
		s.behind.mu.RLock() // before s.mu, as a flush takes them
		defer s.behind.mu.RUnlock()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applyLocked(b, durable)
}

// applyLocked is apply with the locks held.
func (s *Store) applyLocked(b *batch, durable bool) (wait func() error, entered bool, err error) {
	db, err := s.writableDB(b)
	if err != nil {
		return nil, false, err
	}
	unsynced := s.inMem || !durable
	defer s.commits.leave(s.commits.enter())
	installs := s.invalidateResident(b.pb, b.expired, b.runs, !unsynced)
	installs.noSpare = b.noSpare
	if unsynced {
		err = s.applyUnsynced(db, b.pb)
	} else {
		wait, err = s.applyDurable(db, b.pb)
	}
	s.settleResident(installs, err == nil)
	if err == nil && !b.noSpare {
		s.installSole(b.sole)
	}
	if err == nil && len(b.behind) > 0 {
		err = s.settleBehind(db, b.behind)
	}
	if err == nil && b.marksTouch {
		s.touchLog.Store(true)
	}
	return wait, true, err
}

// writableDB is the DB a commit of b goes to, or why none takes writes;
// s.mu is held shared.
func (s *Store) writableDB(b *batch) (*pebble.DB, error) {
	if s.closed {
		return nil, storage.ErrClosed
	}
	if err := s.writeFailure(); err != nil {
		return nil, fmt.Errorf("pebblestore: commit: %w", err)
	}
	db, err := s.dbLocked()
	if err != nil {
		return nil, err
	}
	if b.gen != s.gen {
		if err := b.rebind(db, s.gen); err != nil {
			return nil, err
		}
	}
	return db, nil
}

// applyUnsynced applies pb without waiting for the WAL; the background
// syncer makes it durable. It takes no guard: a batch pebble fails to
// commit is never published, so it is not visible (durable.go).
func (s *Store) applyUnsynced(db *pebble.DB, pb *pebble.Batch) error {
	if err := s.pebbleWrite(func() error { return db.Apply(pb, pebble.NoSync) }); err != nil {
		return fmt.Errorf("pebblestore: commit: %w", err)
	}
	if !s.inMem {
		s.dirty.Store(true)
	}
	return nil
}

// applyDurable applies pb, visible at once, and returns the wait for its
// WAL sync, which pebble shares among the commits waiting together. The
// sync is awaited in a goroutine of its own, so the guard is released (or
// becomes the view) even if the caller never waits.
func (s *Store) applyDurable(db *pebble.DB, pb *pebble.Batch) (func() error, error) {
	s.durable.orderMu.Lock()
	// Checked again in line: a commit that queued here while the WAL
	// failed would make pebble panic with its commit mutex held, wedging
	// the store until a restart.
	if err := s.writeFailure(); err != nil {
		s.durable.orderMu.Unlock()
		return nil, fmt.Errorf("pebblestore: commit: %w", err)
	}
	g := s.takeGuard(db)
	err := s.pebbleWrite(func() error { return db.ApplyNoSyncWait(pb, pebble.Sync) })
	s.durable.orderMu.Unlock()
	if err != nil {
		s.installView(g)
		return nil, fmt.Errorf("pebblestore: commit: %w", err)
	}
	done := make(chan error, 1)
	s.durable.inflight.Add(1)
	go func() {
		defer s.durable.inflight.Done()
		done <- s.waitSynced(pb, g)
	}()
	var once sync.Once
	var result error
	return func() error {
		once.Do(func() { result = <-done })
		return result
	}, nil
}

// waitSynced waits for a durable commit's WAL sync. Holding s.mu shared
// keeps a reopen from closing the DB under the waiter.
func (s *Store) waitSynced(pb *pebble.Batch, g *guard) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := pb.SyncWait(); err != nil {
		s.fail(err)
		s.installView(g)
		return fmt.Errorf("pebblestore: commit: %w", s.writeFailure())
	}
	s.release(g)
	_ = pb.Close()
	return nil
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
	db, err := s.dbLocked()
	if err != nil {
		return err
	}
	if err := s.syncDB(db); err != nil {
		return fmt.Errorf("pebblestore: sync: %w", err)
	}
	return nil
}

// syncDB writes an empty LogData record with Sync, which makes pebble fsync
// the WAL up to and including it, covering every earlier commit.
func (s *Store) syncDB(db *pebble.DB) error {
	return s.pebbleWrite(func() error { return db.LogData(nil, pebble.Sync) })
}

func (s *Store) syncLoop(interval time.Duration) {
	defer s.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
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
	db, err := s.dbLocked()
	if err != nil {
		return storage.Metrics{}
	}
	m := db.Metrics()
	out := storage.Metrics{
		MemBytes: int64(m.MemTable.Size) + m.BlockCache.Size, MemTableBytes: int64(m.MemTable.Size),
		BlockCacheBytes: m.BlockCache.Size, BlockCacheHits: m.BlockCache.Hits, BlockCacheMisses: m.BlockCache.Misses,
		Compactions: m.Compact.Count, CompactionDebt: int64(m.Compact.EstimatedDebt), Flushes: m.Flush.Count,
		ReadAmplification: int64(m.ReadAmp()), L0Files: m.Levels[0].TablesCount, WALBytes: int64(m.WAL.PhysicalSize),
		WriteStalls: s.stalls.Load(),
	}
	s.residentMetrics(&out)
	if s.inMem {
		out.MemBytes += int64(m.DiskSpaceUsage())
	} else {
		out.DiskBytes = int64(m.DiskSpaceUsage())
	}
	return out
}

// OnReopen implements storage.Engine: f runs after every recovery reopen.
func (s *Store) OnReopen(f func()) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.hooks = append(s.hooks, f)
}

// Close implements storage.Engine. It stops the syncer and the recoverer,
// closes iterators and snapshots still open (their later calls fail with
// storage.ErrClosed), syncs the WAL and closes pebble. Calls after Close
// return storage.ErrClosed.
func (s *Store) Close() error {
	// What is still pending when the WAL is synced below is replayed
	// from its patches at the next open; this spares the replay.
	if err := s.flushBehind(); err != nil && !errors.Is(err, storage.ErrClosed) {
		s.logger.Warn("write-behind flush at close failed; its log is replayed at the next open", "err", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()

	close(s.stop)
	s.bg.Wait()
	s.durable.inflight.Wait()
	s.live.closeAll(storage.ErrClosed)
	s.clearTouchMark()
	return s.closeDB()
}

// closeDB closes pebble once nothing else can use it.
func (s *Store) closeDB() error {
	switch {
	case s.wedged.Load():
		// pebble.DB.Close takes the commit mutex a panicking commit may have
		// left locked; hanging shutdown would be worse than leaking the
		// handle until the process exits.
		return fmt.Errorf("pebblestore: close: pebble left open after a commit panic: %w", s.writeFailure())
	case s.db == nil:
		return fmt.Errorf("pebblestore: close: closed while recovering: %w", s.writeFailure())
	}
	var errs []error
	if !s.inMem && s.writeFailure() == nil {
		if err := s.syncDB(s.db); err != nil {
			errs = append(errs, fmt.Errorf("pebblestore: close: sync: %w", err))
		}
	}
	s.dropDurable()
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pebblestore: close: %w", err))
	}
	return errors.Join(errs...)
}

// Flush writes the memtables to sstables and waits for it: benchmarks use
// it to measure reads of flushed data, as a long-running server's are.
func (s *Store) Flush() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return err
	}
	if err := db.Flush(); err != nil {
		return fmt.Errorf("pebblestore: flush: %w", err)
	}
	return nil
}
