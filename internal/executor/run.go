package executor

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// RunFind opens the scan and runs the planned stages over it. A SORT
// reads its whole input here, so that its memory limit applies at once.
func (p *Plan) RunFind() (*aggregate.Execution, error) {
	src := p.Start()
	p.op.track(p.scan)
	run, err := p.pipe.Start(src, p.op.Env)
	if err != nil {
		return nil, err
	}
	p.run = run
	return run, nil
}

// runPipeline runs pipe over the planned scan to its end, for its
// counters.
func (p *Plan) runPipeline(pipe *aggregate.Pipeline) (*aggregate.Execution, error) {
	run, err := pipe.Start(p.Start(), p.op.Env)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	return run, p.op.Drain(run)
}

// SortWithin reads src and sorts it in memory (aggregate.SortBuffered)
// under find's memory limit (SortCheck). With keep > 0 only the best keep
// documents are held, as MongoDB's top-k sort does. It also returns the
// bytes it sorted.
func SortWithin(check func() error, src cursor.Source, s *query.Sort, keep int64, allowDisk bool) ([]bson.D, int64, error) {
	return aggregate.SortBuffered(src, s, keep, SortCheck(check, allowDisk))
}

// SortCheck fails a blocking sort as MongoDB does when it holds more than
// 100 MiB without allowDiskUse (Mayfly then keeps sorting in memory), and
// when the operation is interrupted (check's error).
func SortCheck(check func() error, allowDisk bool) func(held int64) error {
	return func(held int64) error {
		if err := check(); err != nil {
			return err
		}
		if held > SortMemoryLimit && !allowDisk {
			return sortMemoryError()
		}
		return nil
	}
}

func sortMemoryError() error {
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", SortMemoryLimit)
}

// Count counts the documents of c (nil: none) matching q. With no query
// and no hint it answers from the collection's counter, unless exact
// expiry makes the counter stale for a TTL collection or a shard's
// ownership filter must leave orphans out (the counter includes them).
func (e *Executor) Count(op *Op, c *docstore.Collection, q bson.D, hint any, coll *collation.Collation) (int64, error) {
	if c == nil {
		return 0, nil
	}
	if e.fastCount(c, q, hint) && !(op.Ctx != nil && docstore.HasOwnership(op.Ctx)) {
		return c.Count(), nil
	}
	it, err := scanMatching(op, c, q, hint, coll)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	for {
		if n%1024 == 0 {
			if err := op.Check(); err != nil {
				return 0, err
			}
		}
		_, ok, err := it.Next()
		if err != nil || !ok {
			return n, err
		}
		n++
	}
}

// fastCount reports whether a count of c is its counter.
func (e *Executor) fastCount(c *docstore.Collection, q bson.D, hint any) bool {
	return len(q) == 0 && hint == nil && !(e.store.ExactExpiry() && c.HasTTL())
}

// scanMatching opens a guarded scan of c for the documents matching q.
func scanMatching(op *Op, c *docstore.Collection, q bson.D, hint any, coll *collation.Collation) (*docstore.DocIter, error) {
	f, err := Filter(q, nil, coll)
	if err != nil {
		return nil, err
	}
	f = f.Guarded(op.NewGuard())
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	return c.Scan(plan, f).WithContext(op.Ctx).Within(op.Txn), nil
}

// Distinct is the distinct values of key in the documents of c (nil:
// none) matching q, sorted, compared under coll.
func (e *Executor) Distinct(op *Op, c *docstore.Collection, key string, q bson.D, hint any, coll *collation.Collation) (bson.A, error) {
	if c == nil {
		return bson.A{}, nil
	}
	it, err := scanMatching(op, c, q, hint, coll)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var vals []any
	for {
		d, ok, err := it.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		vals = append(vals, DistinctOf(d, key)...)
	}
	return DedupeSorted(vals, Collator(coll)), nil
}

// DistinctOf returns the values a document contributes: array elements
// one by one, as MongoDB's distinct does.
func DistinctOf(d bson.D, key string) []any {
	var out []any
	for _, v := range bsonutil.PathValues(d, key) {
		if a, ok := v.(bson.A); ok {
			out = append(out, a...)
			continue
		}
		out = append(out, v)
	}
	return out
}

// DedupeSorted sorts the values and keeps one of each, comparing them
// under the collation when there is one (then the first seen stands for
// the values equal to it).
func DedupeSorted(vals []any, c query.Collator) bson.A {
	keys := vals
	if c != nil {
		keys = make([]any, len(vals))
		for i, v := range vals {
			keys[i] = c.Value(v)
		}
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return bsonutil.Compare(keys[order[i]], keys[order[j]]) < 0 })
	out := bson.A{}
	for n, i := range order {
		if n > 0 && bsonutil.Compare(keys[order[n-1]], keys[i]) == 0 {
			continue
		}
		out = append(out, vals[i])
	}
	return out
}
