package docstore

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Writes of chunk migration (mongod's fromMigrate). A migration copies
// documents to the recipient and deletes the donor's copy afterwards;
// neither changes a document, so neither records a change event: change
// streams see the writes of applications, once, on the shard that owned
// the document when it was written. These writes act on the stored
// document whether or not it has expired, since an expired copy is still
// stored until a monitor deletes it.
//
// A recipient stores each answer of the donor (a clone batch, or a
// catch-up's documents and deletions) as one write: one batch, and in a
// replica set one raft entry and one log sync, for the whole answer. One
// write per document held a move to a few hundred documents a second,
// each waiting for its own sync.

// migrateBatchBytes bounds one write of ApplyFromMigrate; a larger answer
// commits in several. It is raft's largest append message (repl's
// MaxSizePerMsg), so that one entry never travels split over several.
const migrateBatchBytes = 4 << 20

// migratedWrite is one document of a migration batch: put stores it, or,
// when nil, the stored document with idEnc is removed.
type migratedWrite struct {
	idEnc []byte
	put   *stored
}

// ApplyFromMigrate stores docs as the donor has them, each inserted or
// replacing the stored document with its _id, then removes the documents
// with the _ids of deleted, as migration writes: in one batch while it
// fits migrateBatchBytes, with no change event. A document of docs that
// has expired is not stored: it would stay here, expired, until this
// shard's monitor found it; it is removed instead. A removal removes the
// stored document, live or expired, only when remove says so of it (the
// caller's range test). Where a collection's inserts must see each
// other's index entries (groupable), each document commits alone.
func (c *Collection) ApplyFromMigrate(docs []bson.D, deleted []any, remove func(bson.D) bool) error {
	writes, err := c.prepareMigrated(docs, deleted)
	if err != nil {
		return err
	}
	for done := 0; done < len(writes); {
		n, err := c.commitMigrated(writes[done:migratedRunEnd(writes, done)], remove)
		if err != nil {
			return err
		}
		done += n
	}
	return nil
}

func (c *Collection) prepareMigrated(docs []bson.D, deleted []any) ([]migratedWrite, error) {
	writes := make([]migratedWrite, 0, len(docs)+len(deleted))
	for _, doc := range docs {
		p, err := c.prepareStored(GroupDoc{Doc: doc})
		if err != nil {
			id, _ := lookupID(doc)
			return nil, fmt.Errorf("docstore: migrated document %v: %w", id, err)
		}
		writes = append(writes, migratedWrite{idEnc: p.idEnc, put: p})
	}
	for _, id := range deleted {
		writes = append(writes, migratedWrite{idEnc: keyenc.AppendValue(nil, id)})
	}
	return writes, nil
}

// migratedRunEnd ends the run that starts at from before an _id already
// in it: a batch's second write of a document would read the stored one,
// not the first write's.
func migratedRunEnd(writes []migratedWrite, from int) int {
	seen := make(map[string]bool, len(writes)-from)
	for i := from; i < len(writes); i++ {
		if seen[string(writes[i].idEnc)] {
			return i
		}
		seen[string(writes[i].idEnc)] = true
	}
	return len(writes)
}

// commitMigrated commits a run's writes in one batch, or its first n when
// the batch filled up.
func (c *Collection) commitMigrated(run []migratedWrite, remove func(bson.D) bool) (n int, err error) {
	encs := make([][]byte, len(run))
	puts := false
	for i, w := range run {
		encs[i] = w.idEnc
		puts = puts || w.put != nil
	}
	dropped := func() error {
		if !puts {
			return nil // nothing left to remove
		}
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s was dropped", c.Namespace())
	}
	n, docErr, err := c.groupTx(new(groupCall), encs, WriteOptions{}, noExtras, dropped, func(t *tx, i int) error {
		t.fromMigrate = true // set before anything is staged: no step emits an event
		if i > 0 && (t.b.Len() >= migrateBatchBytes || (run[i].put != nil && !t.st.groupable())) {
			return errRunFull
		}
		return t.stageMigrated(run[i], remove)
	})
	if docErr != nil {
		return 0, docErr
	}
	return n, err
}

// stageMigrated stages one write of a migration batch.
func (t *tx) stageMigrated(w migratedWrite, remove func(bson.D) bool) error {
	old, err := t.load(w.idEnc)
	if err != nil {
		return err
	}
	if w.put == nil || t.c.expiredNow(w.put.doc) {
		if old == nil || !remove(old.doc) {
			return nil
		}
		return t.deleteDoc(old)
	}
	if old == nil {
		return t.insert(w.put)
	}
	return t.replace(old, w.put.doc, true)
}
