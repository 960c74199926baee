package ixbounds

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// ImpliesPartial reports whether every document the query's predicates
// (by path) match also matches a partial index's filter: each clause of
// the filter must be a comparison, $in or {$exists: true} that a
// predicate on the same path implies. Anything else (an $or, a regex)
// makes the index unusable without a hint, which is safe.
func ImpliesPartial(preds map[string][]query.Predicate, partial bson.D) bool {
	for _, c := range query.NormalizeFilter(partial) {
		if !impliedBy(c, preds[c.Path]) {
			return false
		}
	}
	return true
}

func impliedBy(c query.Clause, ps []query.Predicate) bool {
	for _, p := range ps {
		if c.Path != "" && implies(p, c) {
			return true
		}
	}
	return false
}

func implies(p query.Predicate, c query.Clause) bool {
	switch {
	case c.Op == "$exists":
		return bsonutil.TrueValue(c.Val) && !AnyNullish(p.Values) && len(p.Values) > 0
	case p.Op == query.OpEq || p.Op == query.OpIn:
		return len(p.Values) > 0 && allSatisfy(p.Values, c)
	case p.Op.IsRange() && c.Op.IsRange():
		return rangeImplies(p, c)
	}
	return false
}

// allSatisfy reports whether each value satisfies the clause on its own.
func allSatisfy(vs []any, c query.Clause) bool {
	for _, v := range vs {
		if !satisfies(v, c) {
			return false
		}
	}
	return true
}

func satisfies(v any, c query.Clause) bool {
	if c.Op == query.OpIn {
		for _, x := range bsonutil.ToA(c.Val) {
			if bsonutil.Equal(v, x) {
				return true
			}
		}
		return false
	}
	if c.Op == query.OpEq {
		return bsonutil.Equal(v, c.Val)
	}
	if !c.Op.IsRange() || bsonutil.Rank(v) != bsonutil.Rank(c.Val) {
		return false
	}
	return compareHolds(bsonutil.Compare(v, c.Val), c.Op)
}

func compareHolds(cmp int, op query.Op) bool {
	switch op {
	case query.OpGt:
		return cmp > 0
	case query.OpGte:
		return cmp >= 0
	case query.OpLt:
		return cmp < 0
	}
	return cmp <= 0
}

// rangeImplies: {$gt: 7} implies {$gt: 5} and {$gte: 7}; some element
// beyond the tighter bound is beyond the looser one too.
func rangeImplies(p query.Predicate, c query.Clause) bool {
	v := p.Values[0]
	if p.Op.IsLower() != c.Op.IsLower() || bsonutil.Rank(v) != bsonutil.Rank(c.Val) {
		return false
	}
	cmp := bsonutil.Compare(v, c.Val)
	if !p.Op.IsLower() {
		cmp = -cmp
	}
	strict := c.Op.IsStrict()
	pStrict := p.Op.IsStrict()
	return cmp > 0 || (cmp == 0 && (pStrict || !strict))
}
