package shardstate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// fakeConfig is the config servers' metadata, swappable as a router's
// shardCollection or a drop would change it, counting the reads.
type fakeConfig struct {
	mu     sync.Mutex
	coll   *shardmeta.Collection
	chunks []shardmeta.Chunk
	db     *shardmeta.Database
	reads  atomic.Int64
	// incarnations numbers the shardCollections, so each is newer.
	incarnations uint32
}

func (f *fakeConfig) Collection(_ context.Context, ns string) (shardmeta.Collection, []shardmeta.Chunk, bool, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.coll == nil || f.coll.ID != ns {
		return shardmeta.Collection{}, nil, false, nil
	}
	return *f.coll, f.chunks, true, nil
}

func (f *fakeConfig) Database(_ context.Context, db string) (shardmeta.Database, bool, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil || f.db.ID != db {
		return shardmeta.Database{}, false, nil
	}
	return *f.db, true, nil
}

// shard sets ns sharded on {k: "hashed"} over shards, one chunk each,
// as a new incarnation; it returns the routing table.
func (f *fakeConfig) shard(t testing.TB, ns string, shards ...string) *shardmeta.RoutingTable {
	t.Helper()
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	key := bson.D{{Key: "k", Value: "hashed"}}
	p, err := shardkey.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.incarnations++
	ts := bson.Timestamp{T: 1000 + f.incarnations, I: 1}
	coll := shardmeta.Collection{ID: ns, Epoch: bson.NewObjectID(), Timestamp: ts, UUID: uuid, Key: key}
	chunks, err := shardmeta.HashedInitialChunks(shardmeta.InitialLayout{Pattern: p, UUID: uuid, Epoch: coll.Epoch, ValidAfter: ts, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	f.coll, f.chunks = &coll, chunks
	table, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func identityDoc(shard string) bson.D {
	return bson.D{{Key: "_id", Value: IdentityID}, {Key: "shardName", Value: shard},
		{Key: "clusterId", Value: bson.NewObjectID()}, {Key: "configsvrConnectionString", Value: "cfg/127.0.0.1:1"}}
}

func newTestState(cfg *fakeConfig, identity bson.D) *State {
	return New(Options{
		LoadIdentity: func() (bson.D, bool, error) { return identity, identity != nil, nil },
		NewSource:    func(Identity) Source { return cfg },
	})
}

// primedState is shA's State with db.c sharded over shards and its cache
// filled by a first routed command; v is shA's version.
func primedState(t *testing.T, shards ...string) (cfg *fakeConfig, s *State, v shardmeta.ChunkVersion) {
	t.Helper()
	cfg = &fakeConfig{}
	s = newTestState(cfg, identityDoc("shA"))
	v = cfg.shard(t, "db.c", shards...).ShardVersion("shA")
	if _, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &v}); err != nil {
		t.Fatalf("first routed command: %v", err)
	}
	return cfg, s, v
}

// staleInfo is StaleConfigInfo for db.c on shA.
func staleInfo(received, wanted shardmeta.ChunkVersion) bson.D {
	return bson.D{{Key: "ns", Value: "db.c"}, {Key: "vReceived", Value: received.Doc()}, {Key: "vWanted", Value: wanted.Doc()}, {Key: "shardId", Value: "shA"}}
}

func TestStateWithoutIdentityRefusesRoutedCommands(t *testing.T) {
	s := newTestState(&fakeConfig{}, nil)
	sv := shardmeta.Unsharded
	_, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &sv})
	if mongoerr.As(err).Code != mongoerr.ShardingStateNotInitialized {
		t.Fatalf("got %v, want ShardingStateNotInitialized", err)
	}
}

// TestStateRefreshesOnlyWhenTheRouterMayBeAhead: an empty cache and a
// router's newer version read the config servers, then the check runs
// again; a router behind the cache gets StaleConfig without a read.
func TestStateRefreshesOnlyWhenTheRouterMayBeAhead(t *testing.T) {
	ctx := context.Background()
	cfg, s, oldV := primedState(t, "shA", "shB")
	if n := cfg.reads.Load(); n != 1 {
		t.Fatalf("%d config reads for an empty cache, want 1", n)
	}
	if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &oldV}); err != nil || cfg.reads.Load() != 1 {
		t.Fatalf("a fresh version: %v after %d reads, want no error and no read", err, cfg.reads.Load())
	}
	// The collection is dropped and sharded again: a router that knows
	// is ahead of the cache, which refreshes and then agrees.
	fresh := cfg.shard(t, "db.c", "shB", "shA")
	freshV := fresh.ShardVersion("shA")
	if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &freshV}); err != nil || cfg.reads.Load() != 2 {
		t.Fatalf("a newer version: %v after %d reads, want a refresh and no error", err, cfg.reads.Load())
	}
	// The router still on the old incarnation is behind: StaleConfig with
	// the shard's version, and no read.
	_, err := s.Check(ctx, "db", "db.c", Versions{Shard: &oldV})
	wantStale(t, err, mongoerr.StaleConfig, "timestamp mismatch detected for db.c", staleInfo(oldV, freshV))
	if n := cfg.reads.Load(); n != 2 {
		t.Fatalf("%d config reads, want 2: a router behind the cache must not cause one", n)
	}
}

// TestStateStaysStaleWhenTheConfigAgreesWithTheCache: a router claiming
// a version the config servers do not have gets StaleConfig after one
// refresh.
func TestStateStaysStaleWhenTheConfigAgreesWithTheCache(t *testing.T) {
	cfg, s, v := primedState(t, "shA", "shB")
	ahead := v
	ahead.Major++
	_, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &ahead})
	wantStale(t, err, mongoerr.StaleConfig, "placement version mismatch detected for db.c", staleInfo(ahead, v))
	if n := cfg.reads.Load(); n != 2 {
		t.Fatalf("%d config reads, want 2 (the first fill, one refresh)", n)
	}
}

// TestStateConcurrentStaleRequestsShareARefresh: many requests with the
// same newer version queue behind one refresh instead of each reading.
func TestStateConcurrentStaleRequestsShareARefresh(t *testing.T) {
	ctx := context.Background()
	cfg, s, _ := primedState(t, "shA")
	fresh := cfg.shard(t, "db.c", "shA").ShardVersion("shA")
	const requests = 16
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Check(ctx, "db", "db.c", Versions{Shard: &fresh})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := cfg.reads.Load(); n != 2 {
		t.Fatalf("%d config reads for %d stale requests, want 2 (the first fill, one refresh)", n, requests)
	}
}

// TestStateFilterOnlyForShardedCollections: a versioned command on a
// sharded collection gets the ownership filter; on an unsharded one it
// gets none.
func TestStateFilterOnlyForShardedCollections(t *testing.T) {
	ctx := context.Background()
	cfg := &fakeConfig{}
	s := newTestState(cfg, identityDoc("shA"))
	table := cfg.shard(t, "db.sharded", "shA", "shB")
	v := table.ShardVersion("shA")
	if f, err := s.Check(ctx, "db", "db.sharded", Versions{Shard: &v}); err != nil || f == nil {
		t.Fatalf("sharded: filter %v, err %v", f, err)
	}
	u := shardmeta.Unsharded
	if f, err := s.Check(ctx, "db", "db.plain", Versions{Shard: &u}); err != nil || f != nil {
		t.Fatalf("unsharded: filter %v, err %v", f, err)
	}
}

// TestStateDatabaseVersion: only the database's primary shard holds its
// version; a refresh learns it, and another shard answers "No cached
// info" as mongod.
func TestStateDatabaseVersion(t *testing.T) {
	ctx := context.Background()
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	dv := shardmeta.DatabaseVersion{UUID: uuid, Timestamp: bson.Timestamp{T: 7, I: 1}, LastMod: 1}
	cfg := &fakeConfig{db: &shardmeta.Database{ID: "db", Primary: "shA", Version: dv}}
	primary := newTestState(cfg, identityDoc("shA"))
	if _, err := primary.Check(ctx, "db", "db.c", Versions{Database: &dv}); err != nil {
		t.Fatalf("primary shard: %v", err)
	}
	other := newTestState(cfg, identityDoc("shB"))
	_, err = other.Check(ctx, "db", "db.c", Versions{Database: &dv})
	wantStale(t, err, mongoerr.StaleDbVersion, "No cached info for the database db",
		bson.D{{Key: "db", Value: "db"}, {Key: "vReceived", Value: databaseVersionDoc(dv)}})
	behind := dv
	behind.LastMod = 0
	reads := cfg.reads.Load()
	_, err = primary.Check(ctx, "db", "db.c", Versions{Database: &behind})
	wantStale(t, err, mongoerr.StaleDbVersion, "Version mismatch for the database db",
		bson.D{{Key: "db", Value: "db"}, {Key: "vReceived", Value: databaseVersionDoc(behind)}, {Key: "vWanted", Value: databaseVersionDoc(dv)}})
	if cfg.reads.Load() != reads {
		t.Fatal("a router behind the primary's database version caused a config read")
	}
}
