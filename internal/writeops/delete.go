package writeops

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// Delete removes from c the first document f matches (limit 1) or all of
// them (limit 0), and returns how many went.
func (o Op) Delete(c *docstore.Collection, f *query.Filter, limit int, hint any, opt docstore.WriteOptions) (int64, error) {
	owns := docstore.OwnershipOf(o.Ctx)
	if limit != 1 {
		// Removed in groups: a replica set's round for each group, not
		// for each document.
		ids, err := o.AllMatching(c, f, hint)
		if err != nil {
			return 0, err
		}
		return c.RemoveGroup(ids, opt, func(doc bson.D) (bool, error) {
			if !owns(doc) {
				return false, nil // a shard's orphan (docstore.CandidateIDs)
			}
			return f.MatchErr(doc)
		})
	}
	return o.FirstMatching(c, f, hint, func(id any) (bool, error) {
		removed := false
		_, err := c.Modify(id, opt, func(doc bson.D) (docstore.Change, error) {
			if doc != nil && !owns(doc) {
				return docstore.Change{}, nil // a shard's orphan (docstore.CandidateIDs)
			}
			ch, matched, err := RemoveIfMatching(doc, f)
			removed = matched
			return ch, err
		})
		return removed, err
	})
}

// RemoveIfMatching is the change that removes doc, the live document
// (nil when gone), if it matches f; removed says it does.
func RemoveIfMatching(doc bson.D, f *query.Filter) (ch docstore.Change, removed bool, err error) {
	if doc == nil {
		return docstore.Change{}, false, nil
	}
	if ok, err := f.MatchErr(doc); !ok || err != nil {
		return docstore.Change{}, false, err
	}
	return docstore.Change{Kind: docstore.Remove}, true, nil
}
