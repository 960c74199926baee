// Package integration drives a real Mayfly server on 127.0.0.1 with real
// clients: the official Go driver here, and mongosh, the Node.js driver
// and pymongo through the scripts under clients/.
package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// testServer is a server started for one test.
type testServer struct {
	app *app.App
	uri string
}

// startServer starts an in-memory server (or on disk in dir when given) on
// a free loopback port and stops it when the test ends.
func startServer(t testing.TB, cfg app.Config) *testServer {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.DataDir == "" {
		cfg.InMemory = true
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a, err := app.Start(cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	s := &testServer{app: a, uri: fmt.Sprintf("mongodb://%s/?directConnection=true", a.Addr())}
	t.Cleanup(func() { s.stop(t) })
	t.Cleanup(func() { s.validateAll(t) })
	return s
}

// validateAll runs validate on every collection of every database while
// the server still runs (cleanups run last-registered first), and fails
// the test if one is not valid: whatever a test wrote, documents and
// index entries must agree.
func (s *testServer) validateAll(t testing.TB) {
	if s.app == nil || t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(s.uri))
	if err != nil {
		t.Errorf("validate: connect: %v", err)
		return
	}
	defer func() { _ = c.Disconnect(ctx) }()
	dbs, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Errorf("validate: listDatabases: %v", err)
		return
	}
	for _, name := range dbs {
		validateDB(ctx, t, c.Database(name))
	}
}

func validateDB(ctx context.Context, t testing.TB, db *mongo.Database) {
	colls, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Errorf("validate: listCollections on %s: %v", db.Name(), err)
		return
	}
	for _, coll := range colls {
		var res bson.M
		err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: coll}, {Key: "full", Value: true}}).Decode(&res)
		if err != nil {
			t.Errorf("validate %s.%s: %v", db.Name(), coll, err)
			continue
		}
		if res["valid"] != true {
			t.Errorf("validate %s.%s is not valid: %v", db.Name(), coll, res)
		}
	}
}

func (s *testServer) stop(t testing.TB) {
	if s.app == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.app.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	s.app = nil
}

// connect returns a Go driver client for the server, closed at test end.
func connect(t testing.TB, s *testServer) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// newDB starts a server and returns a handle to a test database.
func newDB(t *testing.T) *mongo.Database {
	t.Helper()
	return connect(t, startServer(t, app.Config{})).Database("test")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runCmd runs a command and returns its reply, failing the test on error.
func runCmd(t *testing.T, db *mongo.Database, cmd bson.D) bson.D {
	t.Helper()
	var out bson.D
	if err := db.RunCommand(ctxT(t), cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// cmdErr runs a command that must fail and returns its server error.
func cmdErr(t *testing.T, db *mongo.Database, cmd bson.D) mongo.CommandError {
	t.Helper()
	err := db.RunCommand(ctxT(t), cmd).Err()
	var ce mongo.CommandError
	if !errorAs(err, &ce) {
		t.Fatalf("%v: want a command error, got %v", cmd, err)
	}
	return ce
}

func field(t *testing.T, d bson.D, key string) any {
	t.Helper()
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	t.Fatalf("no field %q in %v", key, d)
	return nil
}

func wantCode(t *testing.T, err error, code int32, msgPart string) {
	t.Helper()
	var se mongo.ServerError
	if !errorAs(err, &se) {
		t.Fatalf("want server error %d, got %v", code, err)
	}
	if !se.HasErrorCode(int(code)) {
		t.Fatalf("want code %d, got %v", code, err)
	}
	if msgPart != "" && !se.HasErrorMessage(msgPart) {
		t.Fatalf("want message containing %q, got %v", msgPart, err)
	}
}
