package shardstate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCriticalSectionPassesTheLogBarrierAfterDraining: the critical
// section waits for the routed commands in flight, then for the writes
// they proposed (the log barrier), in that order, and holds new ones
// off; a barrier that fails leaves no critical section behind.
func TestCriticalSectionPassesTheLogBarrierAfterDraining(t *testing.T) {
	var inflightAtBarrier atomic.Int64
	inflightAtBarrier.Store(-1)
	var m *Migrations
	m = NewMigrations(MigrationOptions{Barrier: func(context.Context) error {
		m.mu.Lock()
		inflightAtBarrier.Store(int64(m.inflight["db.c"]))
		m.mu.Unlock()
		return nil
	}})
	m.loaded = true // no records to read
	leave, err := m.Enter(context.Background(), "db.c")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan error, 1)
	go func() { entered <- m.enterCriticalSection(context.Background(), "db.c") }()
	time.Sleep(100 * time.Millisecond)
	if got := inflightAtBarrier.Load(); got != -1 {
		t.Fatalf("the barrier ran with a routed command still in flight (%d)", got)
	}
	leave()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	if got := inflightAtBarrier.Load(); got != 0 {
		t.Fatalf("the barrier ran with %d routed commands in flight, want 0", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Enter(ctx, "db.c"); mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("a routed command in the critical section: %v, want StaleConfig", err)
	}

	failing := NewMigrations(MigrationOptions{Barrier: func(context.Context) error { return errors.New("not primary") }})
	failing.loaded = true
	if err := failing.enterCriticalSection(context.Background(), "db.c"); err == nil {
		t.Fatal("a failed barrier entered the critical section")
	}
	release, err := failing.Enter(context.Background(), "db.c")
	if err != nil {
		t.Fatalf("after a failed barrier, a routed command: %v", err)
	}
	release()
}
