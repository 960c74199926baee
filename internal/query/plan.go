package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Predicate is one AND-ed condition of a filter on a path, for the index
// planner: Op is "$eq", "$gt", "$gte", "$lt", "$lte" or "$in", Values its
// operand(s) ($in lists all of them, sorted in BSON order). A document that matches the filter
// satisfies every predicate under MongoDB's array rules (some value the
// path yields satisfies it; {$eq: null} also holds for a missing path), so
// predicates may narrow an index scan, but the filter must still be applied
// to every candidate document. Mind array operands: {a: {$eq: [1, 2]}}
// also matches {a: [1, 2]}, which a multikey index stores under the keys 1
// and 2, not under [1, 2] (MongoDB scans both); and {$eq: null} matches
// documents without the path, which an index stores under null.
type Predicate struct {
	Path   string
	Op     Op
	Values []any
}

// Op is a predicate's operator, named as MongoDB writes it.
type Op string

// The operators a Predicate has.
const (
	OpEq  Op = "$eq"
	OpGt  Op = "$gt"
	OpGte Op = "$gte"
	OpLt  Op = "$lt"
	OpLte Op = "$lte"
	OpIn  Op = "$in"
)

// IsRange reports whether op bounds one side of a range.
func (op Op) IsRange() bool { return op == OpGt || op == OpGte || op == OpLt || op == OpLte }

// IsLower reports whether op bounds a range from below.
func (op Op) IsLower() bool { return op == OpGt || op == OpGte }

// IsStrict reports whether op excludes its operand.
func (op Op) IsStrict() bool { return op == OpGt || op == OpLt }

var cmpNames = map[cmpKind]Op{cmpEQ: OpEq, cmpLT: OpLt, cmpLTE: OpLte, cmpGT: OpGt, cmpGTE: OpGte}

// Predicates returns the filter's top-level AND-ed predicates on paths,
// including those inside top-level $and (and one-clause $or), in filter
// order. Conditions that
// are not simple comparisons (regexes, $in lists with regexes, negations,
// $or, $elemMatch, ...) are left out. Under a collation, so are those
// with string operands: an index of the strings themselves cannot bound
// them (KeyedPredicates has them, for an index of collation keys).
func (f *Filter) Predicates() []Predicate {
	return f.predicates(f.coll != nil)
}

// KeyedPredicates are the predicates with those on strings included,
// under the filter's collation with their strings turned into the
// collation's keys: what bounds an index that stores keys of the same
// collation.
func (f *Filter) KeyedPredicates() []Predicate { return f.predicates(false) }

// Collation is the collation the filter compares strings under; nil for
// simple.
func (f *Filter) Collation() Collator { return f.coll }

func (f *Filter) predicates(noStrings bool) []Predicate {
	if n, ok := f.root.(*fieldNode); ok && n.pred[0].Path != "" {
		return n.predicates(noStrings)
	}
	var out []Predicate
	add := func(name string, op fieldOp) {
		if p, ok := predicateOf(name, op); ok && !(noStrings && p.HasString()) {
			out = append(out, p)
		}
	}
	eachTopField(f.root, func(n *fieldNode) {
		// Not flattenOps: its one-op slice would cost every plan an
		// allocation.
		if and, ok := n.op.(andOp); ok {
			for _, op := range and {
				add(n.name, op)
			}
			return
		}
		add(n.name, n.op)
	})
	return out
}

// predicates is Filter.predicates of a filter whose one field is n and
// has a predicate: a view of n's, capped so that an append copies.
func (n *fieldNode) predicates(noStrings bool) []Predicate {
	if noStrings && n.pred[0].HasString() {
		return nil
	}
	return n.pred[:]
}

// Equalities returns the filter's top-level equality conditions as a
// document of dotted paths and values, in filter order: {a: v},
// {a: {$eq: v}} and {a: {$in: [v]}} (one non-regex value), also inside
// top-level $and and one-clause $or. These seed the document an upsert inserts; a path may
// appear more than once, which the update layer must reject as MongoDB
// does. Regex equality ({a: /x/}) is a match, not an equality, and is
// left out.
func (f *Filter) Equalities() bson.D {
	if f.plain != nil {
		return f.plain.Equalities()
	}
	var out bson.D
	eachTopField(f.root, func(n *fieldNode) {
		for _, op := range flattenOps(n.op) {
			if v, ok := equalityOf(op); ok {
				out = append(out, bson.E{Key: n.name, Value: v})
			}
		}
	})
	return out
}

// eachTopField calls fn for each field predicate AND-ed at the top level.
// A one-clause $or counts, as MongoDB's optimizer replaces it by its clause.
func eachTopField(n node, fn func(*fieldNode)) {
	switch x := n.(type) {
	case andNode:
		for _, child := range x {
			eachTopField(child, fn)
		}
	case orNode:
		if len(x) == 1 {
			eachTopField(x[0], fn)
		}
	case *fieldNode:
		fn(x)
	}
}

func flattenOps(op fieldOp) []fieldOp {
	if and, ok := op.(andOp); ok {
		return and
	}
	return []fieldOp{op}
}

func equalityOf(op fieldOp) (any, bool) {
	switch x := op.(type) {
	case *cmpOp:
		return x.rhs[0], x.kind == cmpEQ
	case *inOp:
		if len(x.eqs) == 1 && len(x.regexes) == 0 {
			return x.eqs[0], true
		}
	}
	return nil, false
}

func predicateOf(path string, op fieldOp) (Predicate, bool) {
	switch x := op.(type) {
	case *cmpOp:
		// Values is a view of the filter's operand, capped so that an
		// append copies; no one writes into a Predicate's Values.
		return Predicate{Path: path, Op: cmpNames[x.kind], Values: x.rhs[:]}, true
	case *inOp:
		if len(x.regexes) == 0 {
			return Predicate{Path: path, Op: OpIn, Values: slices.Clone(x.eqs)}, true
		}
	}
	return Predicate{}, false
}

// HasString reports whether an operand holds a string anywhere, which
// only an index of the same collation as the filter's can bound.
func (p Predicate) HasString() bool { return slices.ContainsFunc(p.Values, bsonutil.HoldsString) }
