// Package ixbounds works out, from a query's predicates on one field, the
// values an index scan of that field covers: intervals bracketed by type
// as MongoDB brackets them (a comparison never leaves its value's type),
// tightened only where a multikey index stays exact; and whether
// predicates imply a partial index's filter, which decides whether the
// index may answer the query. It speaks of values, not keys: docstore
// turns intervals into key ranges.
package ixbounds

import (
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// Interval is a range of values; an end that is not inclusive is open.
type Interval struct {
	Lo, Hi         any
	LoIncl, HiIncl bool
}

// IsPoint reports whether iv holds exactly one value.
func (iv Interval) IsPoint() bool {
	return iv.LoIncl && iv.HiIncl && bsonutil.Compare(iv.Lo, iv.Hi) == 0
}

// Point is the interval of v alone.
func Point(v any) Interval { return Interval{Lo: v, Hi: v, LoIncl: true, HiIncl: true} }

// Points are the intervals of an $in list, sorted and without repeats.
func Points(vs []any) []Interval {
	sorted := append([]any(nil), vs...)
	sort.SliceStable(sorted, func(i, j int) bool { return bsonutil.Compare(sorted[i], sorted[j]) < 0 })
	out := make([]Interval, 0, len(sorted))
	for i, v := range sorted {
		if i > 0 && bsonutil.Compare(sorted[i-1], v) == 0 {
			continue
		}
		out = append(out, Point(v))
	}
	return out
}

// Range bounds a field by its comparisons, returning the interval, the
// predicates it used and whether there was any. Only the side of the
// first one is used, as MongoDB does for multikey indexes: two bounds may
// be met by different array elements ({a: [1, 10]} matches {$gt: 5,
// $lt: 2}), so intersecting them could miss documents. Bounds on the same
// side and of one type are tightened. The filter recheck removes the rest.
func Range(ps []query.Predicate) (Interval, []query.Predicate, bool) {
	var best *query.Predicate
	var used []query.Predicate
	for i := range ps {
		p := &ps[i]
		if !p.Op.IsRange() || (best != nil && !sameSide(p, best)) {
			continue
		}
		used = append(used, *p)
		if best == nil || tighter(p, best) {
			best = p
		}
	}
	if best == nil {
		return Interval{}, nil, false
	}
	return bracket(best), used, true
}

// Intersect narrows iv, Range's bound of one side from used, by the
// tightest comparison in ps of the other side and the same type. Only for
// a field that holds no arrays, where one value must meet both.
func Intersect(iv Interval, used []query.Predicate, ps []query.Predicate) (Interval, []query.Predicate) {
	first := used[0]
	var other []query.Predicate
	for _, p := range ps {
		if p.Op.IsRange() && p.Op.IsLower() != first.Op.IsLower() && bsonutil.Rank(p.Values[0]) == bsonutil.Rank(first.Values[0]) && !isNaN(p.Values[0]) {
			other = append(other, p)
		}
	}
	if len(other) == 0 || isNaN(first.Values[0]) {
		return iv, used
	}
	side, _, _ := Range(other)
	if first.Op.IsLower() {
		iv.Hi, iv.HiIncl = side.Hi, side.HiIncl
	} else {
		iv.Lo, iv.LoIncl = side.Lo, side.LoIncl
	}
	return iv, append(used, other...)
}

func sameSide(p, q *query.Predicate) bool {
	return p.Op.IsLower() == q.Op.IsLower() && bsonutil.Rank(p.Values[0]) == bsonutil.Rank(q.Values[0])
}

func tighter(p, best *query.Predicate) bool {
	c := bsonutil.Compare(p.Values[0], best.Values[0])
	if p.Op.IsLower() {
		return c > 0 || (c == 0 && p.Op == query.OpGt)
	}
	return c < 0 || (c == 0 && p.Op == query.OpLt)
}

// bracket is the interval of one comparison, within the values of its
// type (MongoDB's type bracketing: {$gt: 5} never matches a string).
func bracket(p *query.Predicate) Interval {
	v := p.Values[0]
	if isNaN(v) {
		return Point(v)
	}
	bottom, top, topIncl := typeBracket(v)
	switch p.Op {
	case query.OpGt:
		return Interval{Lo: v, Hi: top, HiIncl: topIncl}
	case query.OpGte:
		return Interval{Lo: v, Hi: top, LoIncl: true, HiIncl: topIncl}
	case query.OpLt:
		return Interval{Lo: bottom, Hi: v, LoIncl: true}
	}
	return Interval{Lo: bottom, Hi: v, LoIncl: true, HiIncl: true}
}

func isNaN(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case bson.Decimal128:
		return x.IsNaN()
	}
	return false
}

// typeBracket returns the smallest and largest values of v's type, with
// MongoDB's choices where explain shows them (numbers -inf.0 to inf.0,
// strings "" to {} exclusive); top is exclusive unless topIncl.
func typeBracket(v any) (bottom, top any, topIncl bool) {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128, int:
		return math.Inf(-1), math.Inf(1), true
	case string, bson.Symbol:
		return "", bson.D{}, false
	case bson.DateTime:
		return bson.DateTime(math.MinInt64), bson.DateTime(math.MaxInt64), true
	case bool:
		return false, true, true
	case bson.MaxKey:
		return bson.MaxKey{}, bson.MaxKey{}, true
	}
	rank := bsonutil.Rank(v)
	return rankFloor(rank), rankCeiling(rank), false
}

// rankOrder lists one smallest value of each canonical type, in order.
func rankOrder() []any {
	return []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.Inf(-1), "", bson.D{}, bson.A{},
		bson.Binary{Data: []byte{}}, bson.ObjectID{}, false, bson.DateTime(math.MinInt64),
		bson.Timestamp{}, bson.Regex{}, bson.MaxKey{},
	}
}

func rankFloor(rank int) any {
	for _, v := range rankOrder() {
		if bsonutil.Rank(v) >= rank {
			return v
		}
	}
	return bson.MaxKey{}
}

// rankCeiling is the smallest value of the next type: an exclusive bound.
func rankCeiling(rank int) any {
	for _, v := range rankOrder() {
		if bsonutil.Rank(v) > rank {
			return v
		}
	}
	return bson.MaxKey{}
}

// Nullish reports whether v is a value a document without the field may
// match.
func Nullish(v any) bool {
	switch v.(type) {
	case nil, bson.Null, bson.Undefined, bson.MinKey, bson.MaxKey:
		return true
	}
	return false
}

// AnyNullish reports whether any of vs is Nullish.
func AnyNullish(vs []any) bool {
	for _, v := range vs {
		if Nullish(v) {
			return true
		}
	}
	return false
}
