package docstore

import (
	"fmt"

	"github.com/mayflydb/mayfly/internal/storage"
)

// A replica set member that is not primary never writes through the store:
// it applies the primary's batches beneath it. These keep its in-memory
// state (the catalog and each collection's counters) in step with what it
// applied.

// ApplyCounts adds a replicated batch's count changes to the collection
// with ID collID.
func (s *Store) ApplyCounts(collID uint64, docs, bytes int64) {
	c := s.collectionByID(collID)
	if c == nil {
		return
	}
	c.count.Add(docs)
	c.dataSize.Add(bytes)
}

// Reload reads the catalog and every collection's counters from storage
// again, after a snapshot replaced everything.
func (s *Store) Reload() error {
	_, err := s.reload(true)
	return err
}

// ReloadCatalog reads the catalog from storage again after a replicated
// batch changed it. The collections the store knew keep their counters,
// which the batch's count deltas bring up to date; those new to the store
// are counted from storage, and their IDs returned, so that the caller
// does not add the batch's deltas to them twice. Recounting every
// collection here would walk every document the member holds on each
// replicated create, index build or drop.
func (s *Store) ReloadCatalog() (counted map[uint64]bool, err error) {
	return s.reload(false)
}

// DropUnfinishedBuilds drops the indexes whose build never finished: a
// new primary does it for the builds of a primary that died mid-build.
func (s *Store) DropUnfinishedBuilds() error {
	for _, c := range s.Collections() {
		if err := c.dropUnfinished(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Collection) dropUnfinished() error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	for _, ix := range c.meta().Indexes {
		if ix.Ready || c.dropped.Load() {
			continue
		}
		c.store.logger.Warn("dropping index whose build did not finish", "ns", c.Namespace(), "index", ix.Name)
		if err := c.dropIndexLocked(ix.Name, false); err != nil {
			return fmt.Errorf("docstore: drop unfinished index %s: %w", ix.Name, err)
		}
	}
	return nil
}

// EachStored calls fn with every stored document's BSON in _id order,
// expired ones included: what a member holds.
func (c *Collection) EachStored(fn func(raw []byte) error) error {
	return c.eachStoredIn(c.store.eng, fn)
}

// StoredView reads what every collection stored at one instant: dbHash
// hashes several collections, which mongod does under one lock of the
// database, so that members at one point of the log give one answer
// while they go on applying.
type StoredView struct{ snap storage.Snapshot }

// NewStoredView takes the view; it must be closed.
func (s *Store) NewStoredView() *StoredView { return &StoredView{snap: s.eng.NewSnapshot()} }

// EachStored is c.EachStored as of the view.
func (v *StoredView) EachStored(c *Collection, fn func(raw []byte) error) error {
	return c.eachStoredIn(v.snap, fn)
}

// Close releases the view.
func (v *StoredView) Close() error { return v.snap.Close() }

func (c *Collection) eachStoredIn(r storage.Reader, fn func(raw []byte) error) error {
	p := docPrefix(c.meta().ID)
	it, err := r.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// collectionByID finds a collection by its ID without s.mu (see byID).
func (s *Store) collectionByID(id uint64) *Collection {
	if m := s.byID.Load(); m != nil {
		return (*m)[id]
	}
	return nil
}

// publishIDsLocked publishes byID after a catalog change; s.mu is held.
func (s *Store) publishIDsLocked() {
	m := s.collectionsByIDLocked()
	if old := s.byID.Load(); old != nil {
		for id := range s.dropping {
			if c, ok := (*old)[id]; ok {
				m[id] = c // its drop is not in storage yet
			}
		}
	}
	s.byID.Store(&m)
}
