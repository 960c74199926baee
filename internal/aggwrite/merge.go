package aggwrite

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Merge applies each result to the target by its 'on' fields.
func (w *Writer) Merge(t *Target, out aggregate.Iterator) error {
	c, _, err := w.Store.GetOrCreate(t.DB, t.Coll)
	if err != nil {
		return err
	}
	if err := checkMergeIndex(c, t.On); err != nil {
		return err
	}
	if len(t.On) == 1 && t.On[0] == "_id" {
		return w.mergeByID(c, t, out)
	}
	return w.each(out, func(d bson.D) error { return w.mergeOne(c, t, d) })
}

// mergeByID merges the results on _id in groups (docstore.ModifyGroup):
// in a replica set one raft round for each group of up to 64, not for
// each document. A group ends before a result whose _id it already
// holds, so that the later result meets the earlier one's write.
func (w *Writer) mergeByID(c *docstore.Collection, t *Target, out aggregate.Iterator) error {
	var docs []bson.D
	var ids []any
	held := map[string]bool{}
	flush := func() error {
		err := w.mergeRun(c, t, docs, ids)
		docs, ids = docs[:0], ids[:0]
		clear(held)
		return err
	}
	err := w.each(out, func(d bson.D) error {
		d = withGeneratedID(d, t.On)
		v := bsonutil.PathValues(d, "_id")
		if len(v) != 1 {
			if err := flush(); err != nil {
				return err
			}
			return mongoerr.New(mongoerr.Location51132, "$merge write error: 'on' field '_id' cannot be missing, null, undefined or an array")
		}
		key := string(keyenc.AppendValue(nil, v[0]))
		if held[key] || len(docs) == docstore.InsertGroupDocs {
			if err := flush(); err != nil {
				return err
			}
		}
		held[key] = true
		docs, ids = append(docs, d), append(ids, v[0])
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// mergeRun merges docs, whose _ids are ids, into c in one group.
func (w *Writer) mergeRun(c *docstore.Collection, t *Target, docs []bson.D, ids []any) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := c.ModifyGroup(ids, w.Opt, func(i int, cur bson.D) (docstore.Change, error) {
		if cur == nil {
			return w.unmatchedChange(t, docs[i])
		}
		next, err := w.mergedDoc(c, t, cur, docs[i])
		if next == nil || err != nil {
			return docstore.Change{}, err
		}
		return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: t.WhenMatched == "replace"}, nil
	})
	return err
}

// unmatchedChange is whenNotMatched for d, which matched nothing.
func (w *Writer) unmatchedChange(t *Target, d bson.D) (docstore.Change, error) {
	switch t.WhenNotMatched {
	case "discard":
		return docstore.Change{}, nil
	case "fail":
		return docstore.Change{}, errNoMatch()
	}
	doc, err := w.Prepare(d)
	return docstore.Change{Kind: docstore.Insert, Doc: doc}, err
}

// checkMergeIndex: 'on' fields other than _id need a unique index on
// exactly them, so that a result matches at most one document.
func checkMergeIndex(c *docstore.Collection, on []string) error {
	if len(on) == 1 && on[0] == "_id" {
		return nil
	}
	for _, ix := range c.Indexes() {
		if ix.Ready && ix.Unique && sameFields(ix.Fields, on) {
			return nil
		}
	}
	return mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
}

func sameFields(fields []catalog.Field, on []string) bool {
	if len(fields) != len(on) {
		return false
	}
	for _, f := range fields {
		if !slices.Contains(on, f.Path) {
			return false
		}
	}
	return true
}

// withGeneratedID gives d an ObjectId _id when it has none and the 'on'
// fields include _id, as mongod's $merge does before it reads them.
func withGeneratedID(d bson.D, on []string) bson.D {
	if _, has := bsonutil.Field(d, "_id"); has || !slices.Contains(on, "_id") {
		return d
	}
	return append(d[:len(d):len(d)], bson.E{Key: "_id", Value: bson.NewObjectID()})
}

func (w *Writer) mergeOne(c *docstore.Collection, t *Target, d bson.D) error {
	d = withGeneratedID(d, t.On)
	match := bson.D{}
	for _, path := range t.On {
		v := bsonutil.PathValues(d, path)
		if len(v) != 1 {
			return mongoerr.Newf(mongoerr.Location51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", path)
		}
		match = append(match, bson.E{Key: path, Value: v[0]})
	}
	target, err := c.FindOne(match) // the unique index on the 'on' fields makes it at most one
	if err != nil {
		return err
	}
	if target == nil {
		return w.mergeUnmatched(c, t, d)
	}
	return w.mergeMatched(c, t, target, d)
}

// errNoMatch is whenNotMatched: "fail" meeting a result that matched
// nothing.
func errNoMatch() error {
	return mongoerr.New(mongoerr.MergeStageNoMatchingDocument, "$merge could not find a matching document in the target collection for at least one document in the source collection")
}

func (w *Writer) mergeUnmatched(c *docstore.Collection, t *Target, d bson.D) error {
	switch t.WhenNotMatched {
	case "discard":
		return nil
	case "fail":
		return errNoMatch()
	}
	doc, err := w.Prepare(d)
	if err != nil {
		return err
	}
	return c.Insert(doc, w.Opt)
}

// mergedDoc is whenMatched for d, which matched target: the document to
// put in target's place, or nil to keep it.
func (w *Writer) mergedDoc(c *docstore.Collection, t *Target, target, d bson.D) (bson.D, error) {
	id, _ := bsonutil.Field(target, "_id")
	switch t.WhenMatched {
	case "keepExisting":
		return nil, nil
	case "fail":
		return nil, c.DuplicateKeyError(t.On, d)
	case "replace":
		return append(bson.D{{Key: "_id", Value: id}}, bsonutil.WithoutField(d, "_id")...), nil
	case "merge":
		return bsonutil.WithFields(target, d), nil // whenMatched: "merge"
	}
	return w.applyMatchedPipeline(t, target, d)
}

func (w *Writer) mergeMatched(c *docstore.Collection, t *Target, target, d bson.D) error {
	id, _ := bsonutil.Field(target, "_id")
	next, err := w.mergedDoc(c, t, target, d)
	if next == nil || err != nil {
		return err
	}
	_, err = c.Modify(id, w.Opt, func(cur bson.D) (docstore.Change, error) {
		if cur == nil {
			return docstore.Change{}, nil
		}
		return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: t.WhenMatched == "replace"}, nil
	})
	return err
}

// applyMatchedPipeline runs whenMatched's pipeline over the existing
// document with $$new bound to the result.
func (w *Writer) applyMatchedPipeline(t *Target, target, d bson.D) (bson.D, error) {
	p, err := aggregate.Parse(t.MatchedPipeline, aggregate.Options{Let: bson.D{{Key: "new", Value: bson.D{{Key: "$literal", Value: d}}}}})
	if err != nil {
		return nil, err
	}
	return w.RunPipeline(p, target)
}
