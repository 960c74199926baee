package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
)

// NewFilterVars parses a command's filter with its let variables (from
// expr.EvalLet, $$NOW included), which $expr clauses may read. A $$name
// that is neither defined there nor a builtin fails here, with MongoDB's
// 17276, whatever the collection holds.
func NewFilterVars(filter bson.D, vars map[string]any) (*Filter, error) {
	f, err := NewFilter(filter)
	if err != nil {
		return nil, err
	}
	if err := checkExprVars(filter, vars); err != nil {
		return nil, err
	}
	f.vars = vars
	return f, nil
}

// checkExprVars checks the $expr clauses where MongoDB allows them: at the
// top level and under $and, $or and $nor.
func checkExprVars(filter bson.D, vars map[string]any) error {
	for _, e := range filter {
		switch e.Key {
		case "$expr":
			if err := expr.CheckDefined(e.Value, vars); err != nil {
				return err
			}
		case "$and", "$or", "$nor":
			a, _ := e.Value.(bson.A)
			for _, x := range a {
				if d, ok := x.(bson.D); ok {
					if err := checkExprVars(d, vars); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
