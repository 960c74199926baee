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
	colls    map[string]collEntry
	dbs      map[string]dbEntry

	// refreshMu lets one refresh run at a time: requests that queue behind
	// it find the cache already refreshed and read nothing more.
	refreshMu sync.Mutex
}

// collEntry is the cached placement of one namespace; table is nil for a
// collection the cluster does not shard. gen counts refreshes.
type collEntry struct {
	table *shardmeta.RoutingTable
	gen   uint64
}

// dbEntry is the cached version of a database whose primary shard this
// is; version is nil when another shard is primary or the database does
// not exist.
type dbEntry struct {
	version *shardmeta.DatabaseVersion
	gen     uint64
}

// New returns a State that reads its identity lazily.
func New(opts Options) *State {
	return &State{opts: opts, colls: map[string]collEntry{}, dbs: map[string]dbEntry{}}
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
	entry, known := s.cachedCollection(ns)
	if known {
		wanted := wantedVersion(entry.table, shard)
		err := CheckShardVersion(ns, received, &wanted, shard)
		if err == nil || received == Ignored || routerIsBehind(received, wanted) {
			return entry.table, err
		}
	}
	entry, err := s.refreshCollection(ctx, ns, entry.gen, known)
	if err != nil {
		return nil, err
	}
	wanted := wantedVersion(entry.table, shard)
	return entry.table, CheckShardVersion(ns, received, &wanted, shard)
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

func (s *State) cachedCollection(ns string) (collEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.colls[ns]
	return e, ok
}

// refreshCollection reloads ns's placement unless another request did so
// since this one read the cache (generation seen).
func (s *State) refreshCollection(ctx context.Context, ns string, seen uint64, known bool) (collEntry, error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if e, ok := s.cachedCollection(ns); ok && (!known || e.gen != seen) {
		return e, nil
	}
	coll, chunks, found, err := s.source.Collection(ctx, ns)
	if err != nil {
		return collEntry{}, err
	}
	var table *shardmeta.RoutingTable
	if found {
		if table, err = shardmeta.NewRoutingTable(coll, chunks); err != nil {
			return collEntry{}, fmt.Errorf("shardstate: refresh %s: %w", ns, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := collEntry{table: table, gen: s.colls[ns].gen + 1}
	s.colls[ns] = e
	return e, nil
}

// checkDatabase is checkCollection for a databaseVersion.
func (s *State) checkDatabase(ctx context.Context, db string, received shardmeta.DatabaseVersion) error {
	entry, known := s.cachedDatabase(db)
	if known {
		err := CheckDatabaseVersion(db, received, entry.version)
		if err == nil || (entry.version != nil && routerDBIsBehind(received, *entry.version)) {
			return err
		}
	}
	entry, err := s.refreshDatabase(ctx, db, entry.gen, known)
	if err != nil {
		return err
	}
	return CheckDatabaseVersion(db, received, entry.version)
}

func (s *State) cachedDatabase(db string) (dbEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.dbs[db]
	return e, ok
}

func (s *State) refreshDatabase(ctx context.Context, db string, seen uint64, known bool) (dbEntry, error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if e, ok := s.cachedDatabase(db); ok && (!known || e.gen != seen) {
		return e, nil
	}
	doc, found, err := s.source.Database(ctx, db)
	if err != nil {
		return dbEntry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := dbEntry{gen: s.dbs[db].gen + 1}
	if found && doc.Primary == s.identity.ShardName {
		v := doc.Version
		e.version = &v
	}
	s.dbs[db] = e
	return e, nil
}
