package update

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

// Under a non-simple collation the operators that compare values
// ($addToSet, $pull, $pullAll, $min, $max, $push's $sort and arrayFilters)
// compare strings as the collation orders them, as mongod does: values
// are compared through their collation keys, and stored as given.

// comparator orders values as MongoDB does, strings under coll when it is
// not nil.
func comparator(coll query.Collator) func(a, b any) int {
	if coll == nil {
		return compareValues
	}
	return func(a, b any) int {
		return compareValues(coll.Value(plainIfOwned(a)), coll.Value(plainIfOwned(b)))
	}
}

// compileFilter compiles a query with the query package, so $pull
// conditions and array filters mean exactly what they mean in find, under
// the update's collation.
func compileFilter(d bson.D, coll query.Collator) (matcher, error) {
	var f *query.Filter
	var err error
	if coll == nil {
		f, err = query.NewFilter(d)
	} else {
		f, err = query.NewFilterWith(d, query.FilterOptions{Collation: coll})
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}
