package shardstate

import (
	"context"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// memoryStore is a docstore on an in-memory engine.
func memoryStore(tb testing.TB) *docstore.Store {
	tb.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = eng.Close() })
	store, err := docstore.Open(eng, docstore.Options{Clock: clock.NewManual(time.Unix(1_700_000_000, 0))})
	if err != nil {
		tb.Fatal(err)
	}
	return store
}

// blocked reports whether a routed command on ns waits (it is refused
// at once with StaleConfig under a context that already ended).
func blocked(t *testing.T, m *Migrations, ns string) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	leave, err := m.Enter(ctx, ns)
	if err == nil {
		leave()
		return false
	}
	if mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("Enter(%s): %v, want StaleConfig", ns, err)
	}
	return true
}

// TestDocumentMoveHoldsItsNamespace: a document move holds routed
// commands off its namespace (only), and a migration's critical section
// waits for it as for a routed command in flight; a move released with
// its record still there (its new owner did not answer) keeps the hold,
// and a new primary takes the hold up from the record before it admits
// a routed command, until the move is finished.
func TestDocumentMoveHoldsItsNamespace(t *testing.T) {
	store := memoryStore(t)
	m := NewMigrations(MigrationOptions{Store: store})
	m.loaded = true
	release, err := m.HoldForMove(context.Background(), "db.c", "mv1")
	if err != nil {
		t.Fatal(err)
	}
	if !blocked(t, m, "db.c") || blocked(t, m, "db.other") {
		t.Fatal("a move must hold routed commands off its namespace, and only off it")
	}
	entered := make(chan error, 1)
	go func() { entered <- m.enterCriticalSection(context.Background(), "db.c") }()
	select {
	case err := <-entered:
		t.Fatalf("a critical section began during a document move (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	release(false)
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	m.leaveCriticalSection("db.c")
	if blocked(t, m, "db.c") {
		t.Fatal("routed commands still held after the move and the critical section")
	}

	if err := m.PutRecord(migrate.DocumentMovesColl, "mv2", migrate.DocumentMove{ID: "mv2", Namespace: "db.d"}); err != nil {
		t.Fatal(err)
	}
	release, err = m.HoldForMove(context.Background(), "db.d", "mv2")
	if err != nil {
		t.Fatal(err)
	}
	release(true)
	if !blocked(t, m, "db.d") {
		t.Fatal("a recorded move let go of its namespace before it was finished")
	}
	next := NewMigrations(MigrationOptions{Store: store}) // a new primary
	if !blocked(t, next, "db.d") {
		t.Fatal("a new primary admitted a routed command into a recorded move's namespace")
	}
	if err := next.DeleteRecord(migrate.DocumentMovesColl, "mv2"); err != nil {
		t.Fatal(err)
	}
	release, err = next.HoldForMove(context.Background(), "db.d", "mv2")
	if err != nil {
		t.Fatal(err)
	}
	release(false)
	if blocked(t, next, "db.d") {
		t.Fatal("the hold outlived the finished move")
	}
}
