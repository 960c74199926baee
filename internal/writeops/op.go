package writeops

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/query"
)

// MaxRetargets bounds how often a one-document write looks again when the
// document it found changed before it could take the write lock.
const MaxRetargets = 10

// Op is the operation a statement runs for: its context ends the scans,
// CheckCtx turns that end into the error the client sees, and Now stamps
// the writes.
type Op struct {
	Ctx context.Context
	// CheckCtx is the error the client sees when ctx has ended, nil
	// while it has not. It takes the context rather than closing over
	// it so that it can be a plain func: making an Op allocates nothing.
	CheckCtx func(ctx context.Context) error
	Now      func() time.Time
	// Txn, when set, is the transaction the write is a statement of: its
	// scans read the transaction's view (index-only candidates, read
	// from storage, are not used).
	Txn *docstore.Txn
}

// Interrupted is the error the client sees when the operation has
// ended (CheckCtx of Ctx), nil while it has not.
func (o Op) Interrupted() error { return o.CheckCtx(o.Ctx) }

// getOrCreate is the collection an upsert inserts into, created when
// missing: by the transaction, when the write is a statement of one, so
// that others see it only once the transaction commits.
func (o Op) getOrCreate(store *docstore.Store, db, coll string) (*docstore.Collection, error) {
	if o.Txn != nil {
		c, _, err := o.Txn.GetOrCreate(db, coll)
		return c, err
	}
	c, _, err := store.GetOrCreate(db, coll)
	return c, err
}

// candidates is CandidateIDs outside a transaction.
func (o Op) candidates(c *docstore.Collection, plan *docstore.Plan, f *query.Filter) (*docstore.IDIter, bool) {
	if o.Txn != nil {
		return nil, false
	}
	return c.CandidateIDs(plan, f)
}

// FirstMatching runs write on the first document matching f and returns
// 1 when write reported it matched. write re-checks the filter under the
// document's lock and reports whether the document still matched.
//
// When the plan's index bounds express f exactly, the _ids come from the
// index entries alone (docstore.CandidateIDs) and write's own read is the
// only one of each document: candidates are tried until one matches.
// Otherwise the first matching document is found by a scan.
func (o Op) FirstMatching(c *docstore.Collection, f *query.Filter, hint any, write func(id any) (bool, error)) (int64, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return 0, err
	}
	if cands, ok := o.candidates(c, plan, f); ok {
		defer cands.Close()
		return o.writeCandidates(cands.WithContext(o.Ctx), write)
	}
	ids, err := o.matchingIDs(c.Scan(plan, f).WithContext(o.Ctx).Within(o.Txn), 1)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	matched, err := write(ids[0])
	return b2i(matched), err
}

// AllMatching collects the _id of every document f matches, for a
// multi-document write: every _id is collected before the write changes
// anything, so it never meets its own writes.
func (o Op) AllMatching(c *docstore.Collection, f *query.Filter, hint any) ([]any, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	if cands, ok := o.candidates(c, plan, f); ok {
		defer cands.Close()
		return o.collectIDs(cands.WithContext(o.Ctx).Next, 0)
	}
	return o.matchingIDs(c.Scan(plan, f).WithContext(o.Ctx).Within(o.Txn), 0)
}

// FirstInOrder returns the first document matching f in the order of s
// (any matching document when s is nil); nil when none matches.
func (o Op) FirstInOrder(c *docstore.Collection, f *query.Filter, s *query.Sort, hint any) (bson.D, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	it := c.Scan(plan, f).WithContext(o.Ctx).Within(o.Txn)
	defer it.Close()
	if s == nil {
		d, _, err := it.Next()
		return d, err
	}
	docs, _, err := executor.SortWithin(o.Interrupted, it, s, 1, false)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

// writeCandidates writes the first candidate that write finds matching.
func (o Op) writeCandidates(cands *docstore.IDIter, write func(id any) (bool, error)) (int64, error) {
	for {
		if err := o.Interrupted(); err != nil {
			return 0, err
		}
		id, ok, err := cands.Next()
		if err != nil || !ok {
			return 0, err
		}
		if matched, err := write(id); matched || err != nil {
			return b2i(matched), err
		}
	}
}

// collectIDs gathers the _ids next yields, at most limit (0 for all).
func (o Op) collectIDs(next func() (any, bool, error), limit int) ([]any, error) {
	var ids []any
	for limit == 0 || len(ids) < limit {
		if err := o.Interrupted(); err != nil {
			return nil, err
		}
		id, ok, err := next()
		if err != nil || !ok {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// matchingIDs collects the _ids of the documents a scan yields, at most
// limit (0 for all).
func (o Op) matchingIDs(it *docstore.DocIter, limit int) ([]any, error) {
	defer it.Close()
	return o.collectIDs(func() (any, bool, error) {
		d, ok, err := it.Next()
		if !ok || err != nil {
			return nil, ok, err
		}
		id, _ := bsonutil.Field(d, "_id")
		return id, true, nil
	}, limit)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
