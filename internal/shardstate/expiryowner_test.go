package shardstate

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// expiryMigrations is shA's Migrations over cfg, its recorded critical
// sections loaded.
func expiryMigrations(cfg *fakeConfig, identity bson.D) *Migrations {
	m := NewMigrations(MigrationOptions{State: newTestState(cfg, identity)})
	m.loaded = true
	return m
}

// waitAnswered asks ExpiryOwner about ns until it is not held (the
// background refresh came back), within a bound for a loaded machine.
func waitAnswered(t *testing.T, m *Migrations, ns string) func(bson.D) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		owns, held := m.ExpiryOwner(ns)
		if !held {
			return owns
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: ownership still held after 10s", ns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExpiryOwnerIsTheCachedFilter: once the placement is read, the
// answer is the ownership filter of the cached routing table (nil for a
// namespace the cluster does not shard); a member that is not a shard
// yet owns everything.
func TestExpiryOwnerIsTheCachedFilter(t *testing.T) {
	cfg := &fakeConfig{}
	table := cfg.shard(t, "db.c", "shA", "shB")
	m := expiryMigrations(cfg, identityDoc("shA"))
	// The first ask finds nothing cached: held, whatever the background
	// refresh it starts does next.
	if _, held := m.ExpiryOwner("db.c"); !held {
		t.Fatal("a namespace whose placement is not cached is not held")
	}
	owns := waitAnswered(t, m, "db.c")
	if owns == nil {
		t.Fatal("a sharded namespace got no ownership test")
	}
	want := NewFilter(table, "shA")
	mine := 0
	for i := range 40 {
		doc := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}}
		if owns(doc) != want.Owns(doc) {
			t.Fatalf("document %v: owns %v, the filter says %v", doc, owns(doc), want.Owns(doc))
		}
		if owns(doc) {
			mine++
		}
	}
	if mine == 0 || mine == 40 {
		t.Fatalf("shA owns %d of 40 documents: the filter was not exercised both ways", mine)
	}
	if owns := waitAnswered(t, m, "db.unsharded"); owns != nil {
		t.Fatal("a namespace the cluster does not shard got an ownership test")
	}
	if owns, held := expiryMigrations(cfg, nil).ExpiryOwner("db.c"); owns != nil || held {
		t.Fatalf("a member without a shard identity: test %v, held %v; want none, not held", owns != nil, held)
	}
}

// TestExpiryOwnerHeldWhilePlacementMayChange: each window in which the
// member's answer may be about to change holds it, for its namespace
// only.
func TestExpiryOwnerHeldWhilePlacementMayChange(t *testing.T) {
	cases := []struct {
		name string
		set  func(m *Migrations)
		// every: the window holds every namespace, not db.c's alone.
		every bool
	}{
		{"recorded critical sections not loaded", func(m *Migrations) { m.loaded = false }, true},
		{"donor's critical section", func(m *Migrations) { m.critical["db.c"] = true }, false},
		{"recipient past _recvChunkCommit", func(m *Migrations) {
			rc := &receiver{req: RecvRequest{Namespace: "db.c"}}
			rc.committing.Store(true)
			m.receivers["mig"] = rc
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &fakeConfig{}
			cfg.shard(t, "db.c", "shA", "shB")
			m := expiryMigrations(cfg, identityDoc("shA"))
			waitAnswered(t, m, "db.c")
			waitAnswered(t, m, "db.other")
			m.mu.Lock()
			tc.set(m)
			m.mu.Unlock()
			if _, held := m.ExpiryOwner("db.c"); !held {
				t.Fatal("db.c not held")
			}
			if _, held := m.ExpiryOwner("db.other"); held != tc.every {
				t.Fatalf("another namespace held %v, want %v", held, tc.every)
			}
		})
	}
}
