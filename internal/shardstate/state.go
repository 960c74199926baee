package shardstate

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Options build a State.
type Options struct {
	// LoadIdentity reads the shardIdentity document from this member's
	// admin.system.version; found is false until addShard wrote it.
	LoadIdentity func() (doc bson.D, found bool, err error)
	// NewSource connects to the config servers the identity names; it is
	// called once, when the identity is first read.
	NewSource func(Identity) Source
}

// State is a shard member's view of the cluster: its identity and the
// routing metadata it cached, refreshed when a router shows a newer
// version. It is safe for concurrent use.
type State struct {
	opts Options

	mu       sync.Mutex
	identity *Identity
	source   Source
	colls    map[string]cached[*shardmeta.RoutingTable]
	dbs      map[string]cached[*shardmeta.DatabaseVersion]
	// refreshing holds the namespaces whose placement the expiry
	// machinery is reading in the background (expiryowner.go).
	refreshing map[string]bool
	// epoch counts ForgetPlacements: a refresh that read before the
	// latest one does not store what it read.
	epoch uint64

	// refreshMu lets one refresh run at a time: requests that queue behind
	// it find the cache already refreshed and read nothing more.
	refreshMu sync.Mutex
}

// cached is one cached value with the number of refreshes it has had.
// For a collection the value is its routing table, nil when the cluster
// does not shard it; for a database, its version, nil when another shard
// is its primary or it does not exist.
type cached[V any] struct {
	value V
	gen   uint64
}

// New returns a State that reads its identity lazily.
func New(opts Options) *State {
	return &State{opts: opts, colls: map[string]cached[*shardmeta.RoutingTable]{}, dbs: map[string]cached[*shardmeta.DatabaseVersion]{},
		refreshing: map[string]bool{}}
}

// Versions are the routing versions a command carried; nil fields were
// absent.
type Versions struct {
	Shard    *shardmeta.ChunkVersion
	Database *shardmeta.DatabaseVersion
}

// Check checks a router's versions for db and ns (empty for a command on
// the database), refreshing the cache from the config servers when the
// router may know more, and returns the ownership filter the command's
// reads must apply: nil when ns is not sharded or no shardVersion came.
func (s *State) Check(ctx context.Context, db, ns string, v Versions) (*Filter, error) {
	id, err := s.Identity()
	if err != nil {
		return nil, err
	}
	if v.Database != nil {
		if err := s.checkDatabase(ctx, db, *v.Database); err != nil {
			return nil, err
		}
	}
	if v.Shard == nil || ns == "" {
		return nil, nil
	}
	table, err := s.checkCollection(ctx, ns, *v.Shard, id.ShardName)
	if err != nil || table == nil {
		return nil, err
	}
	return NewFilter(table, id.ShardName), nil
}

// Identity returns the shard's identity, reading it on first use; a
// member addShard has not reached yet refuses routed commands as mongod.
func (s *State) Identity() (Identity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.identity != nil {
		return *s.identity, nil
	}
	doc, found, err := s.opts.LoadIdentity()
	if err != nil {
		return Identity{}, fmt.Errorf("shardstate: read shardIdentity: %w", err)
	}
	if !found {
		return Identity{}, mongoerr.New(mongoerr.ShardingStateNotInitialized,
			"Cannot accept sharding commands if sharding state has not been initialized with a shardIdentity document")
	}
	id, err := ParseIdentity(doc)
	if err != nil {
		return Identity{}, mongoerr.Newf(mongoerr.UnsupportedFormat, "%v", err)
	}
	s.identity, s.source = &id, s.opts.NewSource(id)
	return id, nil
}

// checkCollection checks received against the cache, refreshing first
// when the cache is empty and again when it disagrees and the router may
// be the one ahead.
func (s *State) checkCollection(ctx context.Context, ns string, received shardmeta.ChunkVersion, shard string) (*shardmeta.RoutingTable, error) {
	entry, known := lookup(s, s.colls, ns)
	if known {
		wanted := wantedVersion(entry.value, shard)
		err := CheckShardVersion(ns, received, &wanted, shard)
		if err == nil || received == Ignored || routerIsBehind(received, wanted) {
			return entry.value, err
		}
	}
	entry, err := refreshOnce(s, s.colls, ns, entry.gen, known, func() (*shardmeta.RoutingTable, error) {
		return s.loadCollection(ctx, ns)
	})
	if err != nil {
		return nil, err
	}
	wanted := wantedVersion(entry.value, shard)
	return entry.value, CheckShardVersion(ns, received, &wanted, shard)
}

// wantedVersion is the version this shard expects for a collection:
// its highest chunk's, 0|0 of the incarnation when it owns none, and
// the unsharded version for a collection the cluster does not shard.
func wantedVersion(table *shardmeta.RoutingTable, shard string) shardmeta.ChunkVersion {
	if table == nil {
		return shardmeta.Unsharded
	}
	return table.ShardVersion(shard)
}

// loadCollection reads ns's placement from the config servers.
func (s *State) loadCollection(ctx context.Context, ns string) (*shardmeta.RoutingTable, error) {
	coll, chunks, found, err := s.source.Collection(ctx, ns)
	if err != nil || !found {
		return nil, err
	}
	table, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		return nil, fmt.Errorf("shardstate: refresh %s: %w", ns, err)
	}
	return table, nil
}

// checkDatabase is checkCollection for a databaseVersion.
func (s *State) checkDatabase(ctx context.Context, db string, received shardmeta.DatabaseVersion) error {
	entry, known := lookup(s, s.dbs, db)
	if known {
		err := CheckDatabaseVersion(db, received, entry.value)
		if err == nil || (entry.value != nil && routerDBIsBehind(received, *entry.value)) {
			return err
		}
	}
	entry, err := refreshOnce(s, s.dbs, db, entry.gen, known, func() (*shardmeta.DatabaseVersion, error) {
		return s.loadDatabase(ctx, db)
	})
	if err != nil {
		return err
	}
	return CheckDatabaseVersion(db, received, entry.value)
}

// loadDatabase reads db's version from the config servers; nil unless
// this shard is its primary.
func (s *State) loadDatabase(ctx context.Context, db string) (*shardmeta.DatabaseVersion, error) {
	doc, found, err := s.source.Database(ctx, db)
	if err != nil || !found || doc.Primary != s.shardName() {
		return nil, err
	}
	return &doc.Version, nil
}

func (s *State) shardName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identity.ShardName
}

// lookup reads key's entry of m.
func lookup[V any](s *State, m map[string]cached[V], key string) (cached[V], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := m[key]
	return e, ok
}

// refreshOnce stores load's value as key's entry of m, unless another
// request refreshed key since this one read the cache at generation seen
// (or filled it, when it was empty): requests queued behind one refresh
// take its result instead of reading again. One refresh runs at a time.
func refreshOnce[V any](s *State, m map[string]cached[V], key string, seen uint64, known bool, load func() (V, error)) (cached[V], error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if e, ok := lookup(s, m, key); ok && (!known || e.gen != seen) {
		return e, nil
	}
	epoch := s.currentEpoch()
	v, err := load()
	if err != nil {
		return cached[V]{}, err
	}
	return store(s, m, key, v, epoch), nil
}

// store caches v as key's entry of m, read at epoch: unless the
// placements were forgotten since, for then v may predate what made
// them be forgotten.
func store[V any](s *State, m map[string]cached[V], key string, v V, epoch uint64) cached[V] {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := cached[V]{value: v, gen: m[key].gen + 1}
	if s.epoch == epoch {
		m[key] = e
	}
	return e
}

func (s *State) currentEpoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// ForgetPlacements empties the cache of placements and database
// versions, as mongod clears its filtering metadata when its member steps
// up or down: what a member cached before it lost primacy may predate
// a migration committed since, and a new primary that trusted it would
// take a stale router's writes into a range it gave away and expire its
// orphans as their owner. Each namespace is read again at its next use.
func (s *State) ForgetPlacements() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	clear(s.colls)
	clear(s.dbs)
}
