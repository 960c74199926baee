package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// RemoveGroup removes each live document of ids that matches accepts, as
// Modify with a Remove would one by one, but commits the removals of up
// to InsertGroupDocs documents in one batch: one raft round in a replica
// set, where one per document made a multi-document delete wait for a
// round of fsyncs for each. Removals never conflict with each other's
// index entries, so every collection groups them. It stops at the first
// error, the removals of the documents before it committed, and returns
// how many documents it removed.
func (c *Collection) RemoveGroup(ids []any, opt WriteOptions, matches func(doc bson.D) (bool, error)) (removed int64, err error) {
	for start := 0; start < len(ids); start += InsertGroupDocs {
		chunk := ids[start:min(start+InsertGroupDocs, len(ids))]
		encs := make([][]byte, len(chunk))
		for i, id := range chunk {
			encs[i] = keyenc.AppendValue(nil, id)
		}
		n, err := c.removeRun(encs, opt, matches)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// removeRun removes a run's matching documents in one batch. When the
// filter fails on a document, the documents before it are removed
// together and its error returned.
func (c *Collection) removeRun(encs [][]byte, opt WriteOptions, matches func(doc bson.D) (bool, error)) (int64, error) {
	var firstErr error
	for end := len(encs); end > 0; {
		n, k, docErr, err := c.tryRemove(encs[:end], opt, matches)
		if err != nil {
			return 0, err
		}
		if docErr == nil {
			return n, firstErr
		}
		firstErr, end = docErr, k // each try is shorter: the last error is the earliest
	}
	return 0, firstErr
}

// tryRemove commits the removal of every matching document of the run,
// or none: then k is the document whose filter failed and docErr its
// error.
func (c *Collection) tryRemove(encs [][]byte, opt WriteOptions, matches func(doc bson.D) (bool, error)) (removed int64, k int, docErr, err error) {
	gone := make([]bool, len(encs))
	k, docErr, err = c.groupTx(encs, newSyncWait(opt), opt.Extra, func() error { return nil }, func(t *tx, i int) error {
		gone[i] = false // a retry runs the steps again
		old, err := c.loadForWrite(encs[i])
		if err != nil || old == nil || c.expiredNow(old.doc) {
			return err
		}
		if ok, err := matches(c.live(old.doc)); !ok || err != nil {
			return err
		}
		gone[i] = true
		return t.deleteDoc(old)
	})
	if docErr != nil || err != nil {
		return 0, k, docErr, err
	}
	for _, g := range gone {
		if g {
			removed++
		}
	}
	return removed, 0, nil, nil
}
