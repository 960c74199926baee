package shardstate

import (
	"context"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Refresh reads ns's routing metadata from the config servers now,
// whatever the cache holds, and caches it: a migration's donor and
// recipient learn the commit's new owner this way, and the range deleter
// checks ownership before it deletes anything. Unlike a version check's
// refresh it never takes another request's result, which may have been
// read before the commit.
func (s *State) Refresh(ctx context.Context, ns string) (*shardmeta.RoutingTable, error) {
	return reload(s, s.colls, ns, func() (*shardmeta.RoutingTable, error) { return s.loadCollection(ctx, ns) })
}

// RefreshDatabase reads db's version from the config servers now, as
// Refresh does for a collection: a shard dropping its copy of a database
// learns that the config servers no longer know it.
func (s *State) RefreshDatabase(ctx context.Context, db string) error {
	_, err := reload(s, s.dbs, db, func() (*shardmeta.DatabaseVersion, error) { return s.loadDatabase(ctx, db) })
	return err
}

// reload stores load's value as key's entry of m, one refresh at a time.
func reload[V any](s *State, m map[string]cached[V], key string, load func() (V, error)) (V, error) {
	var zero V
	if _, err := s.Identity(); err != nil {
		return zero, err
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	epoch := s.currentEpoch()
	v, err := load()
	if err != nil {
		return zero, err
	}
	store(s, m, key, v, epoch)
	return v, nil
}
