package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func cmdCount(h *Handler, r *request) (bson.D, error) {
	a, err := parseCountArgs(h, r)
	if err != nil {
		return nil, err
	}
	n, err := h.countMaybeView(r, a.coll, a.query, a.hint, a.collation)
	if err != nil {
		return nil, err
	}
	n = max(n-a.skip, 0)
	if a.limit > 0 && n > a.limit {
		n = a.limit
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
	n, err := cmdargs.Int64(r.name, "limit", v)
	if n < 0 {
		n = -n
	}
	return n, err
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
	values, err := h.executor().Distinct(h.readOp(r, name), h.collection(r, r.db, name), key, q, hint, coll)
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: values}}, nil
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
		return h.executor().Count(h.readOp(r, name), h.deps.Store.Collection(r.db, name), q, hint, cn)
	}
	return h.countOnView(r, v, q)
}

type countArgs struct {
	coll        string
	collation   *collation.Collation
	query       bson.D
	skip, limit int64
	hint        any
}

func parseCountArgs(h *Handler, r *request) (*countArgs, error) {
	a := &countArgs{}
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return nil, err
	}
	if err = checkFields(r, "query", "limit", "skip", "hint", "collation", "fields", "readConcern"); err != nil {
		return nil, err
	}
	if a.collation, err = h.requestCollation(r); err != nil {
		return nil, err
	}
	if a.query, err = optDoc(r, "query"); err != nil {
		return nil, err
	}
	if a.skip, err = optInt(r, "skip", 0); err != nil {
		return nil, err
	}
	a.hint, _ = bsonutil.Field(r.body, "hint")
	a.limit, err = countLimit(r)
	return a, err
}

// counted are COUNT's own counters for n matching documents.
func (a *countArgs) counted(n int64) bson.D {
	counted := max(n-a.skip, 0)
	if a.limit > 0 && counted > a.limit {
		counted = a.limit
	}
	return bson.D{
		{Key: "nCounted", Value: docstore.Num(counted)},
		{Key: "nSkipped", Value: docstore.Num(min(n, a.skip))},
	}
}
