package aggregate

import (
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Under a non-simple collation (Options.Collation) every stage compares
// strings as the collation orders them, as mongod does:
//
//   - $match and $lookup's equality match keyed documents against keyed
//     filters (query.NewFilterWith), and $sort sorts by keyed values;
//   - expressions ($project, $addFields, $group's _id and arguments,
//     $bucket's boundaries, ...) get the collator through their variables
//     (expr.WithCollation) and compare keyed values;
//   - $group groups by the keyed _id, showing the first _id seen for each
//     group, and its $min, $max and $addToSet compare keyed values while
//     returning the values they were given (collatedAcc).
//
// Sub-pipelines ($facet, $lookup, $unionWith) are parsed with the same
// options and so apply the same collation.

// collatedAcc folds keyed values into an accumulator that compares, then
// answers the original values: $min/$max return one of them, $addToSet
// an array of them.
type collatedAcc struct {
	inner expr.Accumulator
	coll  query.Collator
	orig  expr.Originals
}

func (a *collatedAcc) Add(v any) error {
	k := a.coll.Value(v)
	a.orig.Add(k, v)
	return a.inner.Add(k)
}

func (a *collatedAcc) Result() any { return a.orig.Restore(a.inner.Result()) }

// newAccumulator is expr.NewAccumulator under the run's collation.
func newAccumulator(op string, coll query.Collator) expr.Accumulator {
	acc, _ := expr.NewAccumulator(op)
	switch {
	case coll == nil:
		return acc
	case op == "$min" || op == "$max" || op == "$addToSet":
		return &collatedAcc{inner: acc, coll: coll, orig: expr.Originals{}}
	}
	return acc
}
