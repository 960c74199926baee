package docstore

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/ixbounds"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// hashedKeyValues are keyValues for an index with a hashed field: one
// value per field, none of them an array or under one (mongod's 16766,
// for every field of the index), the hashed field as its hash64 — of its
// collation key under a collation, so that collation-equal strings make
// one key.
func (ix *indexState) hashedKeyValues(doc bson.D) ([][]any, bool, error) {
	if ix.partial != nil && !ix.partial.Match(doc) {
		return nil, false, nil
	}
	vals := make([][]any, len(ix.def.Fields))
	allMissing := true
	for i, f := range ix.def.Fields {
		v, found, err := valueNoArrays(doc, f.Path)
		if err != nil {
			return nil, false, err
		}
		allMissing = allMissing && !found
		if f.Hashed {
			if v, err = hashOf(ix.keyed(v)); err != nil {
				return nil, false, err
			}
		}
		vals[i] = []any{v}
	}
	if ix.def.Sparse && allMissing {
		return nil, false, nil
	}
	return vals, true, nil
}

// valueNoArrays walks a dotted path through embedded documents. A
// missing field, or a scalar where a document was needed, is null; an
// array on the way or at the end is refused with the path up to it.
func valueNoArrays(doc bson.D, path string) (v any, found bool, err error) {
	parts := strings.Split(path, ".")
	var cur any = doc
	for i, part := range parts {
		d, isDoc := cur.(bson.D)
		if !isDoc {
			return nil, false, nil
		}
		cur, found = bsonutil.Lookup(d, part)
		if !found {
			return nil, false, nil
		}
		if _, isArr := cur.(bson.A); isArr {
			return nil, false, mongoerr.Newf(mongoerr.Location16766, "Error: hashed indexes do not currently support array values. Found array at path: %s", strings.Join(parts[:i+1], "."))
		}
	}
	return cur, true, nil
}

// hashOf is the value a hashed index stores for v.
func hashOf(v any) (any, error) {
	h, err := shardkey.Hash(v)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "cannot hash %T for a hashed index: %v", v, err)
	}
	return h, nil
}

// hashedFieldBound bounds a hashed field: an equality or $in by the
// hashes of its values; nothing else (a hash keeps no order). The
// predicates stay unexact (not covered): colliding values share a hash,
// so the filter is checked again on each document.
func (ix *indexState) hashedFieldBound(b fieldBounds, ps []query.Predicate) (fieldBounds, int, bool) {
	b.hashed, b.keyed = true, false
	sparse := ix.def.Sparse
	if eq := findOp(ps, query.OpEq); eq != nil && !(sparse && ixbounds.Nullish(eq.Values[0])) {
		h, err := hashOf(eq.Values[0])
		if err != nil {
			return b, 0, false
		}
		b.full, b.ivals = false, []ixbounds.Interval{ixbounds.Point(h)}
		return b, 2, true
	}
	if in := findOp(ps, query.OpIn); in != nil && !(sparse && ixbounds.AnyNullish(in.Values)) {
		hashes := make([]any, 0, len(in.Values))
		for _, v := range in.Values {
			h, err := hashOf(v)
			if err != nil {
				return b, 0, false
			}
			hashes = append(hashes, h)
		}
		b.full, b.ivals = false, ixbounds.Points(hashes)
		return b, 1, true
	}
	return b, 0, false
}
