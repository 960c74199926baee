package docstore

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/storage"
)

// After the storage engine reopens itself to recover from a storage failure
// (storage.Engine.OnReopen), what the store caches from storage may be
// wrong: writes committed without sync whose WAL write failed are gone
// although the counters include them, and a catalog change that returned an
// error (a failed drop, create or rename) may or may not have reached
// storage. The store therefore reloads the catalog and recounts every
// collection, as at open.
//
// Commands keep running meanwhile. The catalog is swapped under s.mu (held
// only while the catalog entries are read, not for the recounts); each
// collection is then settled under its schemaMu held exclusively, so no
// write or index change to it runs between the recount and the counters
// being set.

func (s *Store) afterReopen() {
	if _, err := s.reload(true); err != nil {
		s.logger.Error("reloading the catalog after the storage reopened failed; collection counts may be wrong until the next reopen or restart", "err", err)
		return
	}
	s.logger.Info("catalog and collection counts reloaded after the storage reopened")
}

// reload makes the catalog match storage, and the counters of every
// collection when recountAll is set, else only those of the collections
// new to the store, whose IDs it returns.
func (s *Store) reload(recountAll bool) (counted map[uint64]bool, err error) {
	entries, gone, err := s.reloadCatalog()
	if err != nil {
		return nil, fmt.Errorf("docstore: reload: %w", err)
	}
	for _, c := range gone {
		c.schemaMu.Lock()
		c.dropped.Store(true)
		c.schemaMu.Unlock()
	}
	defer s.indexesChanged() // index sets may differ; the TTL monitor re-plans
	counted = map[uint64]bool{}
	for _, e := range entries {
		recount := recountAll || e.fresh
		if err := e.c.resync(e.db, e.name, recount); err != nil {
			return nil, fmt.Errorf("docstore: reload %s.%s: %w", e.db, e.name, err)
		}
		if recount {
			counted[e.c.meta().ID] = true
		}
	}
	return counted, nil
}

// catalogEntry is a collection as placed by reloadCatalog, under the name
// its catalog entry in storage has.
type catalogEntry struct {
	c        *Collection
	db, name string
	fresh    bool // c is new: the store knew no collection with its ID
}

// reloadCatalog rebuilds the name → collection map from the catalog in
// storage. A collection still there keeps its Collection (cursors, writers
// and the TTL monitor hold them); one found only in storage gets a new one;
// those gone from storage are returned to be marked dropped.
func (s *Store) reloadCatalog() ([]catalogEntry, []*Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nextID, metas, err := s.readCatalog()
	if err != nil {
		return nil, nil, err
	}
	known := s.collectionsByIDLocked()
	dbs := map[string]map[string]*Collection{}
	var entries []catalogEntry
	for _, meta := range metas {
		if s.dropping[meta.ID] {
			continue // its DropCollection is deleting it
		}
		c, fresh := known[meta.ID], false
		if c == nil {
			c, fresh = newCollection(s, meta), true
		}
		delete(known, meta.ID)
		if dbs[meta.DB] == nil {
			dbs[meta.DB] = map[string]*Collection{}
		}
		dbs[meta.DB][meta.Name] = c
		entries = append(entries, catalogEntry{c: c, db: meta.DB, name: meta.Name, fresh: fresh})
	}
	s.dbs = dbs
	s.publishIDsLocked()
	// Never hand out an ID storage may already use: a create that failed
	// may still have stored its collection and the next ID.
	s.nextID = max(s.nextID, nextID)
	var gone []*Collection
	for _, c := range known {
		gone = append(gone, c)
	}
	return entries, gone, nil
}

func (s *Store) collectionsByIDLocked() map[uint64]*Collection {
	byID := map[uint64]*Collection{}
	for _, d := range s.dbs {
		for _, c := range d {
			byID[c.meta().ID] = c
		}
	}
	return byID
}

// resync settles the collection against its catalog entry under db.name,
// read again under schemaMu, recounting its documents if recount is set.
// An entry that is gone or now belongs to another collection was changed
// by a drop or rename after the catalog was read; that operation keeps the
// collection's state itself.
func (c *Collection) resync(db, name string, recount bool) error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	if c.dropped.Load() {
		return nil
	}
	meta, err := c.store.readMeta(db, name)
	if err != nil || meta == nil || meta.ID != c.meta().ID {
		return err
	}
	return c.settle(meta, recount)
}

// readMeta reads one catalog entry; nil if there is none.
func (s *Store) readMeta(db, name string) (*catalog.Collection, error) {
	key := catalogKey(db, name)
	raw, err := s.eng.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeMeta(key, raw)
}

// dropDone ends a DropCollection: a reload may handle the collection's ID
// again (if the drop failed, its catalog entry is still in storage).
func (s *Store) dropDone(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.dropping, id)
	s.publishIDsLocked()
}
