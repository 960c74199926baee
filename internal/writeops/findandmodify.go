package writeops

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
)

// FindAndModify is findAndModify's write of one document.
type FindAndModify struct {
	Filter *query.Filter
	Sort   *query.Sort
	Hint   any
	Remove bool
	Mod    Modifier // nil with Remove
	// Refresh adds the refreshOnRead dates of the document returned to
	// the same atomic write.
	Refresh bool
}

// Found is the document findAndModify wrote: as it was and as it is
// (After is Before when the update changed nothing; nil after a remove).
// Before is nil when no document matched.
type Found struct {
	Before, After bson.D
}

// FindAndModify removes or modifies the first document of c that w's
// filter matches in its sort order, if it still matches under the lock;
// when it no longer does, it looks again, at most MaxRetargets times. A
// retryable write's record (rt) commits in the same batch.
func (o Op) FindAndModify(c *docstore.Collection, w *FindAndModify, rt *session.Txn, opt docstore.WriteOptions) (Found, error) {
	for try := 0; try < MaxRetargets; try++ {
		found, err := o.findAndModifyOnce(c, w, rt, opt)
		if err != nil || found.Before != nil {
			return found, err
		}
	}
	return Found{}, nil
}

func (o Op) findAndModifyOnce(c *docstore.Collection, w *FindAndModify, rt *session.Txn, opt docstore.WriteOptions) (Found, error) {
	target, err := o.FirstInOrder(c, w.Filter, w.Sort, w.Hint)
	if err != nil || target == nil {
		return Found{}, err
	}
	id, _ := bsonutil.Field(target, "_id")
	var found Found
	opt = Recorded(rt, opt, 0, func() bson.D {
		return bson.D{{Key: "before", Value: found.Before}, {Key: "after", Value: found.After}}
	})
	_, err = c.Modify(id, opt, func(doc bson.D) (docstore.Change, error) {
		return o.modifyFound(c, w, doc, &found)
	})
	if err != nil {
		return Found{}, err
	}
	return found, nil
}

// modifyFound is the change of doc, the live document (nil when gone),
// when it still matches; found notes it.
func (o Op) modifyFound(c *docstore.Collection, w *FindAndModify, doc bson.D, found *Found) (docstore.Change, error) {
	if doc == nil {
		return docstore.Change{}, nil
	}
	ok, pos := matchFor(w.Filter, w.Mod, doc)
	if !ok {
		return docstore.Change{}, nil
	}
	found.Before = doc
	if w.Remove {
		return docstore.Change{Kind: docstore.Remove}, nil
	}
	now := o.Now()
	next, changed, err := w.Mod.Apply(doc, pos, false, now)
	if err != nil {
		return docstore.Change{}, err
	}
	if w.Refresh {
		next, changed = withRefresh(c, doc, next, changed, now)
	}
	found.After = doc
	if !changed {
		return docstore.Change{}, nil
	}
	found.After = next
	if err := o.checkShardKeyUpdate(doc, next, false); err != nil {
		return docstore.Change{}, err
	}
	return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: w.Mod.Replacement()}, nil
}

// withRefresh adds to findAndModify's write the refreshOnRead dates of the
// document it returns, so both land in one atomic write.
func withRefresh(c *docstore.Collection, doc, next bson.D, changed bool, now time.Time) (bson.D, bool) {
	base := doc
	if changed {
		base = next
	}
	if fresh, touched := c.Refreshed(base, now); touched {
		return fresh, true
	}
	return next, changed
}

// UpsertFound inserts into db.coll the document w's upsert builds when
// nothing matched, and returns it.
func (o Op) UpsertFound(store *docstore.Store, db, coll string, w *FindAndModify, rt *session.Txn, opt docstore.WriteOptions) (bson.D, error) {
	doc, err := UpsertDoc(w.Filter, w.Mod, o.Now())
	if err != nil {
		return nil, err
	}
	if err := o.checkShardKeyUpsert(doc); err != nil {
		return nil, err
	}
	c, err := o.getOrCreate(store, db, coll)
	if err != nil {
		return nil, err
	}
	opt = Recorded(rt, opt, 0, func() bson.D { return bson.D{{Key: "upserted", Value: doc}} })
	if err := InsertOne(c, doc, opt); err != nil {
		return nil, err
	}
	return doc, nil
}

// FoundRecord reads a findAndModify's retry record: the document it
// upserted (isUpsert), or the one it found.
func FoundRecord(prior bson.D) (found Found, upserted bson.D, isUpsert bool) {
	if v, ok := bsonutil.Field(prior, "upserted"); ok {
		upserted, _ = v.(bson.D)
		return Found{}, upserted, true
	}
	before, _ := bsonutil.Field(prior, "before")
	after, _ := bsonutil.Field(prior, "after")
	found.Before, _ = before.(bson.D)
	found.After, _ = after.(bson.D)
	return found, nil, false
}
