package docstore

import (
	"bytes"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
)

// A multi-document update or delete, and $merge, commit their documents'
// changes in groups, as an insert command does (InsertGroup): one batch,
// and in a replica set one raft round, for up to InsertGroupDocs
// documents or about insertGroupBytes of them. One round per document
// made updateMany and deleteMany of a thousand documents on three members
// take seconds.

// ModifyGroup applies fn to each document of ids in order, as Modify
// would one by one, and commits the changes of a run of documents in one
// batch. fn gets the document's index in ids and the live document (nil
// when there is none). A run that must start over calls fn again from its
// first document, so fn keeps what it learns by index, overwriting.
// fn may also insert (Insert) a document with the same _id where none
// lives. Replacements and inserts group only where the writes of a batch
// cannot collide (no unique secondary index, not capped, no lruLimit);
// elsewhere each document commits alone. Removals group everywhere. It
// stops at the first error, the changes of the documents before it
// committed, and returns how many documents it got through.
func (c *Collection) ModifyGroup(ids []any, opt WriteOptions, fn func(i int, doc bson.D) (Change, error)) (done int, err error) {
	return c.ModifyEach(ids, opt, nil, fn)
}

// ModifyEach is ModifyGroup for documents that each belong to a statement
// of their own: extras[i] (nil: none) adds document i's writes, a
// retryable statement's record, to the batch that commits its change, and
// only to that one. With extras nil, every batch writes opt.Extra.
func (c *Collection) ModifyEach(ids []any, opt WriteOptions, extras []func(storage.Batch) error, fn func(i int, doc bson.D) (Change, error)) (done int, err error) {
	if opt.Txn != nil {
		return opt.Txn.modifyEach(c, ids, opt, fn)
	}
	encs := make([][]byte, len(ids))
	for i, id := range ids {
		encs[i] = keyenc.AppendValue(nil, id)
	}
	for done < len(encs) {
		end := min(done+InsertGroupDocs, len(encs))
		run := encs[done:end]
		extra := func(int) func(storage.Batch) error { return opt.Extra }
		if extras != nil {
			extra = extrasOf(extras[done:end])
		}
		n, docErr, err := longestPrefix(len(run), func(end int) (int, error, error) {
			return c.tryModify(run[:end], done, opt, extra, fn)
		})
		if err != nil {
			return done, err // the batch failed: none of its documents changed
		}
		if done += n; docErr != nil {
			return done, docErr
		}
	}
	return done, nil
}

// RemoveGroup removes each live document of ids for which matches is true, in
// groups as ModifyGroup. It returns how many it removed.
func (c *Collection) RemoveGroup(ids []any, opt WriteOptions, matches func(doc bson.D) (bool, error)) (removed int64, err error) {
	gone := make([]bool, len(ids))
	done, err := c.ModifyGroup(ids, opt, func(i int, doc bson.D) (Change, error) {
		gone[i] = false
		if doc == nil {
			return Change{}, nil
		}
		ok, err := matches(doc)
		if !ok || err != nil {
			return Change{}, err
		}
		gone[i] = true
		return Change{Kind: Remove}, nil
	})
	for _, g := range gone[:done] {
		if g {
			removed++
		}
	}
	return removed, err
}

// tryModify stages the changes of a run into one batch and commits them:
// k documents, fewer than the run when the batch filled up. When a
// document's change fails, nothing commits, and k is that document and
// docErr its error.
func (c *Collection) tryModify(encs [][]byte, base int, opt WriteOptions, extra func(k int) func(storage.Batch) error, fn func(int, bson.D) (Change, error)) (k int, docErr, err error) {
	dropped := func() error {
		for i := range encs {
			_, _ = fn(base+i, nil) // nothing matched: fn forgets an earlier try
		}
		return nil
	}
	return c.groupTx(new(groupCall), encs, opt, extra, dropped, func(t *tx, i int) error {
		if i > 0 && t.b.Len() >= insertGroupBytes {
			return errRunFull
		}
		old, err := c.loadForWrite(encs[i])
		if err != nil {
			return err
		}
		var cur bson.D
		if old != nil && !c.expiredNow(old.doc) {
			cur = c.live(old.doc)
		}
		ch, err := c.checkedChange(func(doc bson.D) (Change, error) { return fn(base+i, doc) }, opt)(cur)
		switch {
		case err != nil || ch.Kind == Keep:
			return err
		case ch.Kind == Insert: // over a live document, a duplicate key
			return t.insertNew(ch.Doc, opt, i, encs[i])
		case cur == nil:
			return nil
		case ch.Kind == Remove:
			return t.deleteDoc(old)
		case i > 0 && !t.st.groupable():
			return errRunFull // this document's writes must see the batch's
		}
		return t.replace(old, ch.Doc, ch.Whole)
	})
}

// insertNew stages the insert of doc, the run's document i whose _id
// encodes as idEnc, checked and encoded as InsertGroup's are.
func (t *tx) insertNew(doc bson.D, opt WriteOptions, i int, idEnc []byte) error {
	if i > 0 && !t.st.groupable() {
		return errRunFull
	}
	p, err := t.c.prepareStored(GroupDoc{Doc: doc, Opt: opt})
	if err != nil {
		return err
	}
	if !bytes.Equal(p.idEnc, idEnc) { // its stripe is not the one locked
		return fmt.Errorf("docstore: an insert in place of _id %x has another _id", idEnc)
	}
	return t.insert(p)
}
