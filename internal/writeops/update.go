package writeops

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/update"
)

// Update is one parsed update statement.
type Update struct {
	Filter *query.Filter
	Mod    Modifier
	Upsert bool
	Multi  bool
	Hint   any
	// Sort picks the document a single-document update changes (8.0).
	Sort *query.Sort
}

// UpdateResult is what one update statement did.
type UpdateResult struct {
	Matched, Modified int64
	Upserted          any // the inserted document's _id; nil when none
}

// Update applies u in db.coll: opt are the write options of a change,
// upsertOpt those of an upsert of the _id it is given.
func (o Op) Update(store *docstore.Store, db, coll string, u *Update, opt docstore.WriteOptions, upsertOpt func(id any) docstore.WriteOptions) (UpdateResult, error) {
	var res UpdateResult
	if c := store.Collection(db, coll); c != nil {
		var err error
		if res.Matched, res.Modified, err = o.apply(c, u, opt); err != nil {
			return UpdateResult{}, err // a statement that fails counts nothing, as on mongod
		}
	}
	if res.Matched > 0 || !u.Upsert {
		return res, nil
	}
	id, err := o.upsert(store, db, coll, u.Filter, u.Mod, upsertOpt)
	if err != nil {
		return UpdateResult{}, err
	}
	return UpdateResult{Matched: 1, Upserted: id}, nil
}

func (o Op) apply(c *docstore.Collection, u *Update, opt docstore.WriteOptions) (n, modified int64, err error) {
	switch {
	case u.Sort != nil:
		return o.updateFirstSorted(c, u, opt)
	case u.Multi:
		ids, err := o.AllMatching(c, u.Filter, u.Hint)
		if err != nil {
			return 0, 0, err
		}
		return o.updateAll(c, ids, u.Filter, u.Mod, opt)
	}
	n, err = o.FirstMatching(c, u.Filter, u.Hint, func(id any) (bool, error) {
		matched, changed, err := o.updateOne(c, id, u.Filter, u.Mod, opt)
		modified += b2i(changed)
		return matched, err
	})
	return n, modified, err
}

// updateOne re-checks the filter under the write lock and applies mod.
func (o Op) updateOne(c *docstore.Collection, id any, f *query.Filter, mod Modifier, opt docstore.WriteOptions) (matched, changed bool, err error) {
	now, owns := o.Now(), docstore.OwnershipOf(o.Ctx)
	_, err = c.Modify(id, opt, func(doc bson.D) (docstore.Change, error) {
		if doc != nil && !owns(doc) {
			return docstore.Change{}, nil // a shard's orphan (docstore.CandidateIDs)
		}
		var ch docstore.Change
		ch, matched, changed, err = UpdateDoc(doc, f, mod, now)
		if err == nil && changed {
			err = o.checkShardKeyUpdate(doc, ch.Doc, false)
		}
		return ch, err
	})
	return matched, changed, err
}

// updateAll updates the documents of ids that still match f, committing
// them in groups (docstore.ModifyGroup).
func (o Op) updateAll(c *docstore.Collection, ids []any, f *query.Filter, mod Modifier, opt docstore.WriteOptions) (n, modified int64, err error) {
	now, owns := o.Now(), docstore.OwnershipOf(o.Ctx)
	matched, changed := make([]bool, len(ids)), make([]bool, len(ids))
	done, err := c.ModifyGroup(ids, opt, func(i int, doc bson.D) (docstore.Change, error) {
		if doc != nil && !owns(doc) {
			return docstore.Change{}, nil
		}
		var ch docstore.Change
		var err error
		ch, matched[i], changed[i], err = UpdateDoc(doc, f, mod, now)
		if err == nil && changed[i] {
			err = o.checkShardKeyUpdate(doc, ch.Doc, true)
		}
		return ch, err
	})
	for i := range done {
		n += b2i(matched[i])
		modified += b2i(changed[i])
	}
	return n, modified, err
}

// updateFirstSorted updates the first matching document in the
// statement's sort order. When that document changes before the write
// lock is taken and no longer matches, the search starts over.
func (o Op) updateFirstSorted(c *docstore.Collection, u *Update, opt docstore.WriteOptions) (n, modified int64, err error) {
	for try := 0; try < MaxRetargets; try++ {
		target, err := o.FirstInOrder(c, u.Filter, u.Sort, u.Hint)
		if err != nil || target == nil {
			return 0, 0, err
		}
		id, _ := bsonutil.Field(target, "_id")
		matched, changed, err := o.updateOne(c, id, u.Filter, u.Mod, opt)
		if matched || err != nil {
			return b2i(matched), b2i(changed), err
		}
	}
	return 0, 0, nil
}

// UpdateDoc applies mod to doc, the live document (nil when gone), when
// it still matches f.
func UpdateDoc(doc bson.D, f *query.Filter, mod Modifier, now time.Time) (ch docstore.Change, matched, changed bool, err error) {
	if doc == nil {
		return ch, false, false, nil
	}
	ok, pos := matchFor(f, mod, doc)
	if !ok {
		return ch, false, false, nil
	}
	next, changed, err := mod.Apply(doc, pos, false, now)
	if err != nil || !changed {
		return ch, true, false, err
	}
	return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: mod.Replacement()}, true, true, nil
}

// matchFor is f.MatchPositional(doc) for mod, which needs the array index
// only for a positional "$" (usesPosition); then f.Match is enough, and
// spares MatchPositional's match context, an allocation. Without $expr
// the context only records the index, so the two agree on the match
// (with $expr, Match might read the document differently under a
// collation, and MatchPositional is kept).
func matchFor(f *query.Filter, mod Modifier, doc bson.D) (bool, int) {
	if usesPosition(mod) || f.UsesExpr() {
		return f.MatchPositional(doc)
	}
	return f.Match(doc), -1
}

// usesPosition reports whether mod reads the array index its filter
// matched; an unknown Modifier is taken to.
func usesPosition(mod Modifier) bool {
	switch m := mod.(type) {
	case OperatorModifier:
		return m.Update.UsesPositional()
	case keepingEmptyTs:
		return m.Update.UsesPositional()
	case PipelineModifier:
		return false
	}
	return true
}

// upsert inserts the document an update builds when nothing matched.
// optFor gives the write options for the document's _id.
func (o Op) upsert(store *docstore.Store, db, coll string, f *query.Filter, mod Modifier, optFor func(id any) docstore.WriteOptions) (any, error) {
	doc, err := UpsertDoc(f, mod, o.Now())
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
	id, _ := bsonutil.Field(doc, "_id")
	if err := InsertOne(c, doc, optFor(id)); err != nil {
		return nil, err
	}
	return id, nil
}

// UpsertDoc is the document an upsert inserts: the filter's equalities
// as its seed, then mod (a replacement keeps the seed's _id only).
func UpsertDoc(f *query.Filter, mod Modifier, now time.Time) (bson.D, error) {
	seed, err := update.UpsertSeed(f.Equalities())
	if err != nil {
		return nil, err
	}
	if mod.Replacement() {
		seedID, hasSeedID := bsonutil.Field(seed, "_id")
		doc, _, err := mod.Apply(bson.D{}, -1, true, now)
		if err != nil {
			return nil, err
		}
		if _, has := bsonutil.Field(doc, "_id"); !has && hasSeedID {
			doc = append(bson.D{{Key: "_id", Value: seedID}}, doc...)
		}
		return docstore.PrepareInsert(doc)
	}
	doc, _, err := mod.Apply(seed, -1, true, now)
	if err != nil {
		return nil, err
	}
	return docstore.PrepareInsert(doc)
}
