package pebblestore

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

func wantWriteFailure(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrWriteFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s: %v; want ErrWriteFailed wrapping ENOSPC", what, err)
	}
	if !strings.HasPrefix(err.Error(), "pebblestore: ") {
		t.Fatalf("%s: error lacks context: %v", what, err)
	}
}

// roomBeforeFailure grows the store's mutable memtable to at least want
// bytes, while the disk takes writes, and leaves it empty. pebble starts
// with a 256 KiB memtable and doubles it at each rotation, and a rotation
// whose WAL close or creation fails panics after releasing the DB mutex
// that a deferred unlock then releases again: the process dies ("unlock of
// unlocked mutex"), as pebble means a WAL failure to end it (see
// docs/design/0006, "A full disk"). The tests of a failing disk fill it
// while the writes under test fit in one memtable, so that no rotation
// falls in the failure.
func roomBeforeFailure(t *testing.T, s *Store, want int64) {
	t.Helper()
	value := make([]byte, 64<<10)
	for i := 0; s.db.Metrics().MemTable.Size < uint64(want); i++ {
		if i == 1000 {
			t.Fatalf("memtable still %d bytes after 1,000 rounds, want %d", s.db.Metrics().MemTable.Size, want)
		}
		for j := range 32 {
			if err := set(t, s, false, fmt.Sprintf("zz-grow-%04d-%02d", i, j), string(value)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDiskFull: with the disk full, commits fail with an error (no panic,
// no hang), reads keep working, and after space returns a reopened store
// has every write acknowledged before the failure and takes new writes.
// pebble cannot resume writing after a WAL error without reopening; with
// automatic recovery off (recover_test.go covers it on) the store keeps
// refusing writes until reopened by hand.
func TestDiskFull(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			mem := vfs.NewMem()
			full := &faultfs.DiskFull{}
			fs := faultfs.Wrap(mem, full)
			s := openT(t, Options{Dir: "db", FS: fs, SyncInterval: 10 * time.Millisecond, RecoverInterval: -1})
			roomBeforeFailure(t, s, 4<<20)
			for i := range 50 {
				if err := set(t, s, true, fmt.Sprintf("before%02d", i), "v"); err != nil {
					t.Fatal(err)
				}
			}

			full.Set(true)
			// A NoSync commit only buffers; the failure shows when the WAL
			// block is written or synced (by a later commit or the syncer).
			var err error
			for i := 0; err == nil && i < 1000; i++ {
				err = storagetest.Within(t, "commit", func() error {
					return set(t, s, sync, fmt.Sprintf("during%04d", i), strings.Repeat("x", 1000))
				})
				if !sync {
					time.Sleep(time.Millisecond)
				}
			}
			wantWriteFailure(t, "commit on a full disk", err)

			// Reads still work, from every read path.
			if _, err := s.Get([]byte("before07")); err != nil {
				t.Fatalf("Get after write failure: %v", err)
			}
			it, err := s.NewIter(nil, []byte("c"))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != 50 {
				t.Fatalf("scan after write failure: %d keys, err %v", n, err)
			}

			// Space comes back: writes stay refused until reopen.
			full.Set(false)
			wantWriteFailure(t, "commit after space returns", storagetest.Within(t, "commit", func() error {
				return set(t, s, true, "after", "v")
			}))
			wantWriteFailure(t, "Sync", storagetest.Within(t, "sync", s.Sync))
			_ = storagetest.Within(t, "Close", s.Close) // may report the failure; must return

			r := openT(t, Options{Dir: "db", FS: fs})
			defer r.Close()
			for i := range 50 {
				if _, err := r.Get(fmt.Appendf(nil, "before%02d", i)); err != nil {
					t.Fatalf("acknowledged write before%02d lost: %v", i, err)
				}
			}
			if err := set(t, r, true, "after-reopen", "v"); err != nil {
				t.Fatalf("write after reopen: %v", err)
			}
		})
	}
}

// TestConcurrentCommitsDuringFailure: many committers hit the failure at
// once; every call returns, none panics.
func TestConcurrentCommitsDuringFailure(t *testing.T) {
	full := &faultfs.DiskFull{}
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full)})
	roomBeforeFailure(t, s, 4<<20)
	full.Set(true)
	errs := make(chan error, 32)
	for g := range 32 {
		go func() {
			var err error
			for i := 0; i < 20 && err == nil; i++ {
				err = set(t, s, i%2 == 0, fmt.Sprintf("g%d-%d", g, i), strings.Repeat("x", 2000))
			}
			errs <- err
		}()
	}
	for range 32 {
		select {
		case err := <-errs:
			if err == nil {
				continue // this committer finished before the failure was seen
			}
			wantWriteFailure(t, "concurrent commit", err)
		case <-time.After(10 * time.Second):
			t.Fatal("a committer hung")
		}
	}
	if _, err := s.Get([]byte("g0-0")); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get after failure: %v", err)
	}
	_ = storagetest.Within(t, "Close", s.Close)
}

// TestFailedWritesNeverRead: durable writers run while the disk fills.
// Once the store has failed, no write answered with an error can be read,
// and every write acknowledged as durable can; both commit forms are used
// (Commit(true), and CommitNoWait then its wait as a group commit does).
func TestFailedWritesNeverRead(t *testing.T) {
	full := &faultfs.DiskFull{}
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), SyncInterval: 5 * time.Millisecond, RecoverInterval: -1})
	defer func() { _ = storagetest.Within(t, "Close", s.Close) }()
	roomBeforeFailure(t, s, 8<<20)
	type outcome struct {
		key string
		err error
	}
	results := make(chan outcome, 16*400)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				key := fmt.Sprintf("g%02d-%03d", g, i)
				err := durableSet(s, g%2 == 0, key, strings.Repeat("x", 500))
				results <- outcome{key, err}
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	full.Set(true)
	wg.Wait()
	close(results)
	acked, failed := 0, 0
	for r := range results {
		_, err := s.Get([]byte(r.key))
		switch {
		case r.err == nil && err != nil:
			t.Errorf("acknowledged %s not readable: %v", r.key, err)
		case r.err != nil && !errors.Is(err, storage.ErrNotFound):
			t.Errorf("%s was answered %v, yet Get says %v", r.key, r.err, err)
		}
		if r.err == nil {
			acked++
		} else {
			failed++
		}
	}
	t.Logf("%d writes acknowledged, %d failed", acked, failed)
	if failed == 0 {
		t.Fatal("no write failed: the disk never filled")
	}
}

// durableSet writes key with a synced commit, or in two steps as a group
// commit does.
func durableSet(s *Store, direct bool, key, value string) error {
	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte(key), []byte(value)); err != nil {
		return err
	}
	if direct {
		return b.Commit(true)
	}
	wait, err := storage.CommitNoWait(b, s)
	if err != nil {
		return err
	}
	return wait()
}
