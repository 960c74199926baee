package commands

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// newTestHandler returns a Handler over an in-memory store, closed when
// the test ends, and a detached connection to run commands on.
func newTestHandler(tb testing.TB) (*Handler, *server.Conn) {
	tb.Helper()
	return newClockedHandler(tb, clock.Real{})
}

// newClockedHandler is newTestHandler with the server's clock given.
func newClockedHandler(tb testing.TB, clk clock.Clock) (*Handler, *server.Conn) {
	tb.Helper()
	return newStoreHandler(tb, clk, nil)
}

// newResidentHandler is newTestHandler with a resident cache of the
// server's default size in front of the store, as the server runs: the
// session benchmarks measure the path the server takes.
func newResidentHandler(tb testing.TB) (*Handler, *server.Conn, *rescache.Cache) {
	tb.Helper()
	cache := rescache.New(rescache.DefaultBytes, nil)
	h, conn := newStoreHandler(tb, clock.Real{}, cache)
	return h, conn, cache
}

// newStoreHandler is newClockedHandler with the store's resident cache
// given (nil: none).
func newStoreHandler(tb testing.TB, clk clock.Clock, resident *rescache.Cache) (*Handler, *server.Conn) {
	tb.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: logger, Resident: resident})
	if err != nil {
		tb.Fatalf("open storage: %v", err)
	}
	store, err := docstore.Open(eng, docstore.Options{Logger: logger, Clock: clk, Resident: resident})
	if err != nil {
		tb.Fatalf("open docstore: %v", err)
	}
	cursors := cursor.NewRegistry(nil, 0)
	tb.Cleanup(func() {
		cursors.CloseAll()
		_ = eng.Close()
	})
	h := New(Deps{Store: store, Cursors: cursors, Logger: logger, Clock: clk})
	return h, server.NewDetachedConn(1, "127.0.0.1:50000")
}

// runOn runs body (its first key is the command's name) against db.
func runOn(h *Handler, c *server.Conn, db string, body bson.D) bson.D {
	body = append(body, bson.E{Key: "$db", Value: db})
	return h.Handle(context.Background(), c, &server.Command{DB: db, Name: body[0].Key, Body: body})
}

func replyCode(reply bson.D) int32 {
	v, _ := bsonutil.Field(reply, "code")
	n, _ := v.(int32)
	return n
}
