package commands

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

func cmdCount(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "query", "limit", "skip", "hint", "collation", "fields", "readConcern"); err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	q, err := optDoc(r, "query")
	if err != nil {
		return nil, err
	}
	skip, err := optInt(r, "skip", 0)
	if err != nil {
		return nil, err
	}
	limit, err := countLimit(r)
	if err != nil {
		return nil, err
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	n, err := h.countMaybeView(r, name, q, hint, coll)
	if err != nil {
		return nil, err
	}
	n = max(n-skip, 0)
	if limit > 0 && n > limit {
		n = limit
	}
	return bson.D{{Key: "n", Value: int32(n)}}, nil
}

// countLimit reads count's limit; a negative limit counts like a positive
// one, as in MongoDB.
func countLimit(r *request) (int64, error) {
	v, ok := bsonutil.Field(r.body, "limit")
	if !ok || v == nil {
		return 0, nil
	}
	n, err := toInt64(r.name, "limit", v)
	if n < 0 {
		n = -n
	}
	return n, err
}

func (h *Handler) countDocs(r *request, coll string, q bson.D, hint any, cn *collation.Collation) (int64, error) {
	c := h.deps.Store.Collection(r.db, coll)
	if c == nil {
		return 0, nil
	}
	if len(q) == 0 && hint == nil && !(h.deps.Store.ExactExpiry() && c.HasTTL()) {
		return c.Count(), nil
	}
	f, err := commandFilter(q, nil, cn)
	if err != nil {
		return 0, err
	}
	f = f.Guarded(newGuard(r.ctx))
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return 0, err
	}
	it := c.Scan(plan, f).WithContext(r.ctx)
	defer it.Close()
	var n int64
	for {
		if n%1024 == 0 {
			if err := checkInterrupt(r.ctx); err != nil {
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

func cmdDistinct(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "key", "query", "collation", "hint"); err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	kv, _ := bsonutil.Field(r.body, "key")
	key, ok := kv.(string)
	if !ok {
		return nil, wrongType(r.name, "key", kv, "string")
	}
	if key == "" {
		return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	q, err := optDoc(r, "query")
	if err != nil {
		return nil, err
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	if v, err := h.resolveView(r.db, name); err != nil || v != nil {
		if err != nil {
			return nil, err
		}
		values, err := h.distinctOnView(r, v, key, q)
		return bson.D{{Key: "values", Value: values}}, err
	}
	values, err := h.distinctValues(r, name, key, q, hint, coll)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: values}}, nil
}

func (h *Handler) distinctValues(r *request, coll, key string, q bson.D, hint any, cn *collation.Collation) (bson.A, error) {
	c := h.deps.Store.Collection(r.db, coll)
	if c == nil {
		return bson.A{}, nil
	}
	f, err := commandFilter(q, nil, cn)
	if err != nil {
		return nil, err
	}
	f = f.Guarded(newGuard(r.ctx))
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	it := c.Scan(plan, f).WithContext(r.ctx)
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
		vals = append(vals, distinctOf(d, key)...)
	}
	return dedupeSorted(vals, collator(cn)), nil
}

// distinctOf returns the values a document contributes: array elements
// one by one, as MongoDB's distinct does.
func distinctOf(d bson.D, key string) []any {
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

// dedupeSorted sorts the values and keeps one of each, comparing them
// under the collation when there is one (then the first seen stands for
// the values equal to it).
func dedupeSorted(vals []any, c query.Collator) bson.A {
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

// countMaybeView counts a collection's or a view's matching documents.
func (h *Handler) countMaybeView(r *request, name string, q bson.D, hint any, cn *collation.Collation) (int64, error) {
	if h.localView(r.db, name) {
		return h.countLocal(r, name, q)
	}
	v, err := h.resolveView(r.db, name)
	if err != nil || v == nil {
		if err != nil {
			return 0, err
		}
		return h.countDocs(r, name, q, hint, cn)
	}
	return h.countOnView(r, v, q)
}
