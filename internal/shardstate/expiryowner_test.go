package shardstate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
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

// TestPrimacyChangeForgetsPlacements: a member that steps up or down
// reads every placement again before it trusts it. Its cache may
// predate a migration committed while it was not primary: kept, it
// would take a stale router's write into a range it gave away and
// expire the range's orphans as their owner, beside the recipient.
func TestPrimacyChangeForgetsPlacements(t *testing.T) {
	ctx := context.Background()
	cfg, s, oldV := primedState(t, "shA", "shB")
	m := NewMigrations(MigrationOptions{State: s})
	m.loaded = true
	if owns := waitAnswered(t, m, "db.c"); owns == nil || !ownsAny(owns) {
		t.Fatal("before the move, shA owns none of db.c")
	}
	// db.c moves wholly to shB while this member is not told.
	cfg.shard(t, "db.c", "shB")
	if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &oldV}); err != nil {
		t.Fatalf("the stale cache should still take the stale router's version (the hazard): %v", err)
	}
	// A critical section its donor entered in its earlier primacy, whose
	// migration another primary has finished since.
	m.mu.Lock()
	m.critical["db.c"] = true
	m.mu.Unlock()
	s.mu.Lock()
	s.dbs["db"] = cached[*shardmeta.DatabaseVersion]{value: &shardmeta.DatabaseVersion{}}
	s.mu.Unlock()
	m.PrimacyChanged()
	m.mu.Lock()
	stale := m.critical["db.c"]
	m.mu.Unlock()
	if stale {
		t.Fatal("a change of primacy kept the critical section of an earlier primacy")
	}
	if _, kept := lookup(s, s.dbs, "db"); kept {
		t.Fatal("a change of primacy kept a cached database version")
	}
	if _, held := m.ExpiryOwner("db.c"); !held {
		t.Fatal("after a change of primacy, expiry not held before the records are loaded")
	}
	m.mu.Lock()
	m.loaded = true // as loadRecorded sets it on the new primary
	m.mu.Unlock()
	if owns := waitAnswered(t, m, "db.c"); owns != nil && ownsAny(owns) {
		t.Fatal("after a change of primacy, shA still expires db.c's documents as their owner")
	}
	if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &oldV}); mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("after a change of primacy, the stale router's version: %v, want StaleConfig", err)
	}
}

// TestForgetDuringRefreshDropsItsResult: a read that began before the
// placements were forgotten is answered but not cached.
func TestForgetDuringRefreshDropsItsResult(t *testing.T) {
	cfg := &fakeConfig{}
	v := cfg.shard(t, "db.c", "shA", "shB").ShardVersion("shA")
	var s *State
	forgetting := &forgetOnRead{fakeConfig: cfg}
	s = New(Options{
		LoadIdentity: func() (bson.D, bool, error) { return identityDoc("shA"), true, nil },
		NewSource:    func(Identity) Source { return forgetting },
	})
	forgetting.state = s
	forgetting.armed.Store(true)
	if _, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &v}); err != nil {
		t.Fatalf("check during a forget: %v", err)
	}
	if _, cached := lookup(s, s.colls, "db.c"); cached {
		t.Fatal("a placement read before a forget was cached after it")
	}
	if _, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &v}); err != nil {
		t.Fatal(err)
	}
	if _, cached := lookup(s, s.colls, "db.c"); !cached {
		t.Fatal("a read after the forget was not cached")
	}
}

// forgetOnRead forgets the state's placements during its next read.
type forgetOnRead struct {
	*fakeConfig
	state *State
	armed atomic.Bool
}

func (f *forgetOnRead) Collection(ctx context.Context, ns string) (shardmeta.Collection, []shardmeta.Chunk, bool, error) {
	if f.armed.Swap(false) {
		f.state.ForgetPlacements()
	}
	return f.fakeConfig.Collection(ctx, ns)
}

// ownsAny reports whether owns claims any of 40 documents of db.c.
func ownsAny(owns func(bson.D) bool) bool {
	for i := range 40 {
		if owns(bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}}) {
			return true
		}
	}
	return false
}
