package docstore

import (
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

// PutFromMigrate stores doc, replacing the stored document with its _id
// if there is one, without a change event.
func (c *Collection) PutFromMigrate(doc bson.D) error {
	p, err := c.prepareStored(GroupDoc{Doc: doc})
	if err != nil {
		return err
	}
	return c.withDocLock(p.idEnc, func(l *lockSet) error {
		if c.dropped.Load() {
			return mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s was dropped", c.Namespace())
		}
		old, err := c.loadForWrite(p.idEnc)
		if err != nil {
			return err
		}
		t := c.newTx(l)
		t.fromMigrate = true
		if old == nil {
			err = t.insert(p)
		} else {
			err = t.replace(old, doc, true)
		}
		if err != nil {
			t.abort()
			return err
		}
		return t.commit(WriteOptions{})
	})
}

// RemoveFromMigrate deletes the stored document with id, live or
// expired, when remove says so of it, without a change event.
func (c *Collection) RemoveFromMigrate(id any, remove func(bson.D) bool) error {
	idEnc := keyenc.AppendValue(nil, id)
	return c.withDocLock(idEnc, func(l *lockSet) error {
		if c.dropped.Load() {
			return nil
		}
		old, err := c.loadForWrite(idEnc)
		if err != nil || old == nil || !remove(old.doc) {
			return err
		}
		t := c.newTx(l)
		t.fromMigrate = true
		return t.applyChange(old, Change{Kind: Remove})
	})
}
