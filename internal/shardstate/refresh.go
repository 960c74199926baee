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
	if _, err := s.Identity(); err != nil {
		return nil, err
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	table, err := s.loadCollection(ctx, ns)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.colls[ns] = cached[*shardmeta.RoutingTable]{value: table, gen: s.colls[ns].gen + 1}
	return table, nil
}

// RefreshDatabase reads db's version from the config servers now, as
// Refresh does for a collection: a shard dropping its copy of a database
// learns that the config servers no longer know it.
func (s *State) RefreshDatabase(ctx context.Context, db string) error {
	if _, err := s.Identity(); err != nil {
		return err
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	v, err := s.loadDatabase(ctx, db)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dbs[db] = cached[*shardmeta.DatabaseVersion]{value: v, gen: s.dbs[db].gen + 1}
	return nil
}
