package storagetest

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Bounds for RunRecovery: no call may take longer than CallTimeout, and the
// engine must take writes again within RecoverWithin of the disk doing so.
const (
	CallTimeout   = 10 * time.Second
	RecoverWithin = 10 * time.Second
)

// RunRecovery checks that an engine recovers from a full disk on its own.
// open returns a fresh, empty engine and setFull, which makes every write
// to the engine's disk fail with ENOSPC (true) or work again (false). The
// suite closes the engine.
//
// With the disk full, a commit fails with an error wrapping
// storage.ErrWriteFailed and ENOSPC, and reads still work. Once the disk
// works again, within RecoverWithin: commits succeed, OnReopen callbacks
// run, every write committed with sync before the failure is there, and
// iterators and snapshots left open across the reopen fail with
// storage.ErrInvalidated instead of reading freed memory.
func RunRecovery(t *testing.T, open func(t *testing.T) (e storage.Engine, setFull func(full bool))) {
	e, setFull := open(t)
	t.Cleanup(func() {
		if err := Within(t, "Close", e.Close); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	reopened := make(chan struct{}, 1)
	e.OnReopen(func() {
		select {
		case reopened <- struct{}{}:
		default:
		}
	})
	const acked = 50
	for i := range acked {
		commit(t, e, true, ackedKey(i), "v")
	}
	it, err := e.NewIter(nil, nil)
	must(t, err)
	defer it.Close()
	snap := e.NewSnapshot()
	defer snap.Close()

	setFull(true)
	wantDiskFull(t, firstFailure(t, e))
	if n := len(scan(t, e, []byte("acked"), []byte("acked~"))); n != acked {
		t.Fatalf("scan with the disk full: %d keys, want %d", n, acked)
	}
	wantValue(t, e, ackedKey(7), "v")

	setFull(false)
	waitWritable(t, e)
	select {
	case <-reopened:
	case <-time.After(RecoverWithin):
		t.Fatal("writes work again but no OnReopen callback ran")
	}
	if n := len(scan(t, e, []byte("acked"), []byte("acked~"))); n != acked {
		t.Fatalf("after recovery: %d acknowledged keys, want %d", n, acked)
	}
	wantValue(t, e, "after", "v")
	wantInvalidated(t, it, snap)
	must(t, e.Sync())
}

func ackedKey(i int) string { return fmt.Sprintf("acked%03d", i) }

// Within runs f and fails the test if it does not return within
// CallTimeout: a storage failure must never hang a caller.
func Within(t testing.TB, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(CallTimeout):
		t.Fatalf("%s hung", what)
		return nil
	}
}

func tryCommit(e storage.Engine, sync bool, key string) error {
	b := e.NewBatch()
	defer b.Close()
	if err := b.Set([]byte(key), []byte("v")); err != nil {
		return err
	}
	return b.Commit(sync)
}

// firstFailure commits with sync until a commit fails; with the disk full
// the first one should.
func firstFailure(t *testing.T, e storage.Engine) error {
	t.Helper()
	for i := range 100 {
		err := Within(t, "commit", func() error { return tryCommit(e, true, fmt.Sprintf("during%03d", i)) })
		if err != nil {
			return err
		}
	}
	t.Fatal("100 sync commits succeeded with the disk full")
	return nil
}

func wantDiskFull(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrWriteFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit with the disk full: %v; want ErrWriteFailed wrapping ENOSPC", err)
	}
}

// waitWritable polls with sync commits until one succeeds; until then each
// must fail as a refused write.
func waitWritable(t *testing.T, e storage.Engine) {
	t.Helper()
	deadline := time.Now().Add(RecoverWithin)
	for {
		err := Within(t, "commit", func() error { return tryCommit(e, true, "after") })
		switch {
		case err == nil:
			return
		case !errors.Is(err, storage.ErrWriteFailed):
			t.Fatalf("commit while recovering: %v; want ErrWriteFailed", err)
		case time.Now().After(deadline):
			t.Fatalf("writes still refused %v after the disk works again: %v", RecoverWithin, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantInvalidated(t *testing.T, it storage.Iterator, snap storage.Snapshot) {
	t.Helper()
	if it.First() || it.Key() != nil {
		t.Error("iterator opened before the reopen still reads")
	}
	if err := it.Error(); !errors.Is(err, storage.ErrInvalidated) {
		t.Errorf("iterator opened before the reopen: Error() = %v, want ErrInvalidated", err)
	}
	if _, err := snap.Get([]byte(ackedKey(0))); !errors.Is(err, storage.ErrInvalidated) {
		t.Errorf("snapshot taken before the reopen: Get = %v, want ErrInvalidated", err)
	}
}
