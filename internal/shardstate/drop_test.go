package shardstate

import (
	"context"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// TestStateLearnsOfADropFromTheConfigServers: a router that sends
// UNSHARDED for a collection the cache holds sharded may have seen it
// dropped, so the shard reads the config servers once. Dropped there, the
// command runs unsharded; still sharded there (a stale router), it gets
// mongod's StaleConfig, and each such command reads again.
func TestStateLearnsOfADropFromTheConfigServers(t *testing.T) {
	cfg, s, v := primedState(t, "shA", "shB")
	unsharded := shardmeta.Unsharded
	before := cfg.reads.Load()
	_, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &unsharded})
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.StaleConfig || e.Msg != "timestamp mismatch detected for db.c" {
		t.Fatalf("UNSHARDED while sharded: %v", err)
	}
	if got := cfg.reads.Load() - before; got != 1 {
		t.Fatalf("%d config reads, want 1", got)
	}
	cfg.mu.Lock()
	cfg.coll, cfg.chunks = nil, nil // the router's drop
	cfg.mu.Unlock()
	filter, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &unsharded})
	if err != nil || filter != nil {
		t.Fatalf("UNSHARDED after the drop: filter %v, %v", filter, err)
	}
	if _, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &v}); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("the dropped incarnation's version: %v, want StaleConfig", err)
	}
}

// TestDatabaseDropHoldsEveryNamespaceOfItsDatabase: while a dropDatabase
// holds db, routed commands on each of db's namespaces wait and those of
// other databases (db2, and dbx whose name db prefixes) go on; the hold
// begins only once the commands in flight on db ended, and reads db's
// version again, so that the dropped database's version is stale.
func TestDatabaseDropHoldsEveryNamespaceOfItsDatabase(t *testing.T) {
	cfg := &fakeConfig{db: &shardmeta.Database{ID: "db", Primary: "shA", Version: shardmeta.DatabaseVersion{LastMod: 1}}}
	s := newTestState(cfg, identityDoc("shA"))
	v := cfg.db.Version
	if _, err := s.Check(context.Background(), "db", "", Versions{Database: &v}); err != nil {
		t.Fatalf("the database's version before the drop: %v", err)
	}
	m := NewMigrations(MigrationOptions{State: s, Store: memoryStore(t)})
	m.loaded = true
	leave, err := m.Enter(context.Background(), "db.c")
	if err != nil {
		t.Fatal(err)
	}
	cfg.mu.Lock()
	cfg.db = nil // the router deleted the database's entry
	cfg.mu.Unlock()
	held := make(chan func(), 1)
	go func() {
		release, err := m.HoldDatabaseForDrop(context.Background(), "db")
		if err != nil {
			t.Error(err)
		}
		held <- release
	}()
	select {
	case <-held:
		t.Fatal("the database's hold began with a routed command still in flight")
	case <-time.After(100 * time.Millisecond):
	}
	leave()
	release := <-held
	for _, ns := range []string{"db.c", "db.other"} {
		if !blocked(t, m, ns) {
			t.Errorf("a routed command on %s ran during its database's drop", ns)
		}
	}
	for _, ns := range []string{"db2.c", "dbx.c"} {
		if blocked(t, m, ns) {
			t.Errorf("a routed command on %s waited for another database's drop", ns)
		}
	}
	if _, err := s.Check(context.Background(), "db", "", Versions{Database: &v}); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.StaleDbVersion {
		t.Errorf("the dropped database's version after the hold: %v, want StaleDbVersion", err)
	}
	release()
	if blocked(t, m, "db.c") {
		t.Error("routed commands still held after the drop")
	}
}

// TestNoMigrationBeginsDuringADrop: while a drop holds a namespace, or a
// dropDatabase its database, a migration of it is refused (it would
// share, and end, the drop's critical section); one of another
// namespace begins, and the namespace's migrations begin again after.
func TestNoMigrationBeginsDuringADrop(t *testing.T) {
	s := newTestState(&fakeConfig{}, identityDoc("shA"))
	m := NewMigrations(MigrationOptions{State: s, Store: memoryStore(t)})
	m.loaded = true
	refused := func(ns string) bool {
		t.Helper()
		err := m.claim("mig", ns)
		if err == nil {
			m.release("mig")
			return false
		}
		if mongoerr.As(err).Code != mongoerr.ConflictingOperationInProgress {
			t.Fatalf("claim of %s: %v", ns, err)
		}
		return true
	}
	release, err := m.HoldForDrop(context.Background(), "db.c")
	if err != nil {
		t.Fatal(err)
	}
	if !refused("db.c") || refused("db.d") {
		t.Error("during the drop of db.c: a migration of db.c must be refused, one of db.d not")
	}
	release()
	if refused("db.c") {
		t.Error("a migration of db.c refused after its drop")
	}
	release, err = m.HoldDatabaseForDrop(context.Background(), "db2")
	if err != nil {
		t.Fatal(err)
	}
	if !refused("db2.x") || refused("db.c") {
		t.Error("during the drop of db2: a migration of db2.x must be refused, one of db.c not")
	}
	release()
	if refused("db2.x") {
		t.Error("a migration of db2.x refused after its database's drop")
	}
}
