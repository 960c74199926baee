package pebblestore

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

const testRecoverInterval = 5 * time.Millisecond

func TestRecoverConformanceInMemFS(t *testing.T) {
	storagetest.RunRecovery(t, func(t *testing.T) (storage.Engine, func(bool)) {
		full := &faultfs.DiskFull{}
		s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), RecoverInterval: testRecoverInterval})
		return s, full.Set
	})
}

func TestRecoverConformanceOnDisk(t *testing.T) {
	storagetest.RunRecovery(t, func(t *testing.T) (storage.Engine, func(bool)) {
		full := &faultfs.DiskFull{}
		s := openT(t, Options{Dir: t.TempDir(), FS: faultfs.Wrap(vfs.Default, full), RecoverInterval: testRecoverInterval})
		return s, full.Set
	})
}

// failStore fills the disk and commits until the store records the
// failure.
func failStore(t *testing.T, s *Store, full *faultfs.DiskFull) {
	t.Helper()
	full.Set(true)
	for i := range 100 {
		err := storagetest.Within(t, "commit", func() error { return set(t, s, true, fmt.Sprintf("fail%03d", i), "v") })
		if err != nil {
			wantWriteFailure(t, "commit on a full disk", err)
			return
		}
	}
	t.Fatal("commits kept succeeding with the disk full")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(storagetest.RecoverWithin)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *Store) reopens() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

func (s *Store) down() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db == nil
}

func countHooks(s *Store) *atomic.Int64 {
	var n atomic.Int64
	s.OnReopen(func() { n.Add(1) })
	return &n
}

// TestRecoverWaitsForTheDisk: while the disk is full the recoverer keeps
// probing but never gives up the failed DB, so reads keep working; the
// probe leaves no file behind.
func TestRecoverWaitsForTheDisk(t *testing.T) {
	full := &faultfs.DiskFull{}
	mem := vfs.NewMem()
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(mem, full), RecoverInterval: testRecoverInterval})
	defer s.Close()
	hooks := countHooks(s)
	if err := set(t, s, true, "kept", "v"); err != nil {
		t.Fatal(err)
	}
	failStore(t, s, full)
	fails := full.Fails()
	waitFor(t, "ten more probes to fail", func() bool { return full.Fails() >= fails+10 })
	if s.reopens() != 0 || hooks.Load() != 0 {
		t.Fatalf("reopened %d times (hooks %d) with the disk still full", s.reopens(), hooks.Load())
	}
	if _, err := s.Get([]byte("kept")); err != nil {
		t.Fatalf("Get while the disk is full: %v", err)
	}
	full.Set(false)
	waitFor(t, "the reopen", func() bool { return hooks.Load() == 1 })
	if _, err := mem.Stat(mem.PathJoin("db", probeFile)); err == nil {
		t.Fatal("probe file left in the data directory")
	}
}

// probePasses fails writes like a full disk except to the probe file, so
// the recoverer closes the failed DB and then cannot open it again.
type probePasses struct{ faultfs.DiskFull }

func (p *probePasses) MaybeError(op errorfs.Op) error {
	if strings.HasSuffix(op.Path, probeFile) {
		return nil
	}
	return p.DiskFull.MaybeError(op)
}

// TestRecoverRetriesAFailedReopen: when pebble cannot be opened again,
// every call returns an error (no panic, no hang) and the recoverer keeps
// trying until it can.
func TestRecoverRetriesAFailedReopen(t *testing.T) {
	inj := &probePasses{}
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), inj), RecoverInterval: testRecoverInterval})
	defer s.Close()
	for i := range 20 {
		if err := set(t, s, true, fmt.Sprintf("acked%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	failStore(t, s, &inj.DiskFull)
	waitFor(t, "the store to close pebble for a reopen", s.down)

	_, err := s.Get([]byte("acked00"))
	wantWriteFailure(t, "Get while pebble is closed", err)
	_, err = s.NewIter(nil, nil)
	wantWriteFailure(t, "NewIter while pebble is closed", err)
	_, err = s.NewSnapshot().Get([]byte("acked00"))
	wantWriteFailure(t, "snapshot Get while pebble is closed", err)
	wantWriteFailure(t, "commit while pebble is closed", set(t, s, true, "x", "v"))
	wantWriteFailure(t, "Sync while pebble is closed", s.Sync())
	if m := s.Metrics(); m != (storage.Metrics{}) {
		t.Fatalf("Metrics while pebble is closed: %+v", m)
	}

	inj.Set(false)
	waitFor(t, "writes to work again", func() bool { return set(t, s, true, "after", "v") == nil })
	for i := range 20 {
		if _, err := s.Get(fmt.Appendf(nil, "acked%02d", i)); err != nil {
			t.Fatalf("acknowledged acked%02d after recovery: %v", i, err)
		}
	}
}

// TestRecoverMovesOpenBatches: a batch built before the reopen commits
// into the new DB (pebble itself would panic on a batch from another DB).
func TestRecoverMovesOpenBatches(t *testing.T) {
	full := &faultfs.DiskFull{}
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), RecoverInterval: testRecoverInterval})
	defer s.Close()
	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte("early"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteRange([]byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	failStore(t, s, full)
	full.Set(false)
	waitFor(t, "the reopen", func() bool { return s.reopens() == 1 && s.writeFailure() == nil })
	if err := b.Commit(true); err != nil {
		t.Fatalf("commit of a batch made before the reopen: %v", err)
	}
	if v, err := s.Get([]byte("early")); err != nil || string(v) != "v" {
		t.Fatalf("Get(early) = %q, %v", v, err)
	}
}

// TestWedgedStoreIsNotReopened: after a pebble panic in a commit the old DB
// can be neither closed nor safely abandoned, so the store stays failed.
func TestWedgedStoreIsNotReopened(t *testing.T) {
	s := openT(t, Options{Dir: "db", FS: vfs.NewMem(), RecoverInterval: time.Millisecond})
	hooks := countHooks(s)
	if err := s.pebbleWrite(func() error { panic("injected") }); !errors.Is(err, storage.ErrWriteFailed) {
		t.Fatalf("pebbleWrite after panic: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // fifty recovery intervals
	if s.reopens() != 0 || hooks.Load() != 0 {
		t.Fatalf("wedged store reopened %d times", s.reopens())
	}
	if err := set(t, s, true, "a", "1"); !errors.Is(err, storage.ErrWriteFailed) {
		t.Fatalf("commit on a wedged store: %v", err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close of a wedged store reported success")
	}
	_ = s.db.Close() // this pebble is not really wedged; release it
}

// TestCloseStopsRecovery: Close returns while the disk is still full, and
// the recoverer stops probing.
func TestCloseStopsRecovery(t *testing.T) {
	full := &faultfs.DiskFull{}
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), RecoverInterval: time.Millisecond})
	failStore(t, s, full)
	fails := full.Fails()
	waitFor(t, "probes to fail", func() bool { return full.Fails() > fails+3 })
	_ = storagetest.Within(t, "Close", s.Close) // may report the failure; must return
	after := full.Fails()
	time.Sleep(30 * time.Millisecond) // thirty recovery intervals
	if n := full.Fails(); n != after {
		t.Fatalf("%d more failed writes after Close: the recoverer still runs", n-after)
	}
}
