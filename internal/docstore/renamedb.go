package docstore

import (
	"crypto/rand"
	"fmt"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
)

// A rename across databases is, on mongod 8.0, a copy
// (src/mongo/db/catalog/rename_collection.cpp,
// renameCollectionAcrossDatabases): a collection "tmpXXXXX.renameCollection"
// is created in the target database with the source's options and a new
// UUID, the source's indexes are created on it while it is empty, every
// document is inserted into it, it is renamed to the target (dropping a
// replaced target in that rename), and the source is dropped. Each step
// writes its oplog entries, and change streams report them as they are
// (jstests/change_streams/ddl_rename_cross_db.js). Mayfly moves the
// catalog entry instead of copying, and writes the same events, in
// mongod's order, in the rename's one batch.

// copyEventsLimit bounds the documents a rename across databases copies
// into its insert events: they all go into the rename's one write, which
// in a replica set is one entry of the replicated log, where mongod writes
// its copy as many entries. The rename of a larger collection is reported
// as one rename event from the source to the target, its UUID kept.
const copyEventsLimit = 16 << 20

// tmpNameChars are the characters mongod puts for each '%' of a unique
// collection name's model.
const tmpNameChars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// tmpRenameNameLocked picks a name "tmpXXXXX.renameCollection" that no
// collection of db has (under s.mu).
func (s *Store) tmpRenameNameLocked(db string) string {
	for {
		var r [5]byte
		_, _ = rand.Read(r[:])
		name := []byte("tmp")
		for _, b := range r {
			name = append(name, tmpNameChars[int(b)%len(tmpNameChars)])
		}
		n := string(name) + ".renameCollection"
		if _, taken := s.dbs[db][n]; !taken {
			return n
		}
	}
}

// addCopyEvents adds to b the events of mongod's copy of c's collection
// into tmp (the target's catalog entry under its temporary name): its
// create, one createIndexes per index (built on the empty copy) and an
// insert per stored document. The caller holds c's schema lock, so no
// write comes between.
func (c *Collection) addCopyEvents(b storage.Batch, tmp *catalog.Collection) error {
	addCatalogEvent(b, changestream.CreateEvent(tmp))
	for i := range tmp.Indexes {
		if ix := &tmp.Indexes[i]; !ix.IsID() && ix.Ready {
			addCatalogEvent(b, changestream.IndexesEvent(changestream.OpCreateIndexes, tmp, ix.Spec))
		}
	}
	if eb, ok := b.(changestream.EventBatch); !ok || !eb.RecordsEvents() {
		return nil
	}
	p := docPrefix(tmp.ID)
	it, err := c.store.eng.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		addCatalogEvent(b, &changestream.Event{Op: changestream.OpInsert, DB: tmp.DB, Coll: tmp.Name, UUID: tmp.UUID.Data, Doc: it.Value()})
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("docstore: rename: copy events: %w", err)
	}
	return nil
}

// renameAcrossLocked gives meta, c's catalog entry renamed into another
// database, the new UUID mongod's copy has, and adds to b the events of
// the copy, of its rename to the target (dropped: the UUID of the
// collection it replaced) and of the source's drop.
func (s *Store) renameAcrossLocked(b storage.Batch, c *Collection, meta *catalog.Collection, dropped []byte) error {
	src := c.meta()
	if c.DataSize() > copyEventsLimit {
		addCatalogEvent(b, changestream.RenameEvent(meta, src.DB, src.Name, dropped))
		return nil
	}
	meta.UUID = newUUID()
	tmp := meta.Clone()
	tmp.Name = s.tmpRenameNameLocked(meta.DB)
	if err := c.addCopyEvents(b, tmp); err != nil {
		return err
	}
	addCatalogEvent(b, changestream.RenameEvent(meta, tmp.DB, tmp.Name, dropped))
	addCatalogEvent(b, changestream.DropEvent(src))
	return nil
}
