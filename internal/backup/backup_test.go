package backup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// The lock nests: a writer waits, and is counted as waiting, until every
// hold is released.
func TestLockNestsAndHoldsWriters(t *testing.T) {
	l := NewLock()
	if n := l.Lock(); n != 1 {
		t.Fatalf("first Lock = %d", n)
	}
	if n := l.Lock(); n != 2 {
		t.Fatalf("second Lock = %d", n)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for l.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the writer was never counted as waiting")
		}
		time.Sleep(time.Millisecond)
	}
	if left, ok := l.Unlock(); left != 1 || !ok {
		t.Fatalf("Unlock = %d, %v", left, ok)
	}
	select {
	case err := <-done:
		t.Fatalf("writer went on (%v) with one hold left", err)
	case <-time.After(20 * time.Millisecond):
	}
	l.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writer still waits with the lock released")
	}
	if _, ok := l.Unlock(); ok || l.Count() != 0 || l.Waiting() != 0 {
		t.Fatalf("after release: unlock ok %v, count %d, waiting %d", ok, l.Count(), l.Waiting())
	}
}

// A waiting writer gives up with its context's error.
func TestLockWaitEndsWithContext(t *testing.T) {
	l := NewLock()
	l.Lock()
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(ctx); err != context.Canceled {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// A checkpoint is written to a new directory only, and only from a
// server with files.
func TestCheckpointRefusals(t *testing.T) {
	engine, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	existing := t.TempDir()
	if code := mongoerr.As(Checkpoint(engine, false, existing)).Code; code != mongoerr.BadValue {
		t.Fatalf("existing directory: code %v", code)
	}
	fresh := filepath.Join(t.TempDir(), "copy")
	if code := mongoerr.As(Checkpoint(engine, true, fresh)).Code; code != mongoerr.IllegalOperation {
		t.Fatalf("in memory: code %v", code)
	}
	if err := Checkpoint(engine, false, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("no checkpoint written: %v", err)
	}
}
