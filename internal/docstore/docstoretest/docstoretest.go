// Package docstoretest opens a docstore for the tests of the packages
// above it: over an in-memory pebble engine, closed when the test ends.
package docstoretest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// Open returns an empty store in memory, on the real clock, logging
// nowhere.
func Open(t testing.TB) *docstore.Store {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatalf("open storage: %v", err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	store, err := docstore.Open(eng, docstore.Options{Logger: logger, Clock: clock.Real{}})
	if err != nil {
		t.Fatalf("open docstore: %v", err)
	}
	return store
}
