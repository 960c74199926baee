package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
)

// Collator turns strings into keys that compare bytewise as the strings
// compare under a collation (internal/collation implements it).
type Collator interface {
	Value(v any) any
	Doc(d bson.D) bson.D
}

// FilterOptions are what a command adds to its filter: the let variables
// (from expr.EvalLet, $$NOW included) that $expr clauses read, and a
// non-simple collation.
type FilterOptions struct {
	Vars      map[string]any
	Collation Collator
}

// NewFilterWith parses a command's filter with its options. Under a
// collation the comparison operands are turned into keys here and each
// document as it is matched; regexes, $type and the like are left alone,
// as MongoDB's collation does not apply to them.
func NewFilterWith(filter bson.D, o FilterOptions) (*Filter, error) {
	if err := CheckExprVars(filter, o.Vars); err != nil {
		return nil, err
	}
	if o.Collation == nil {
		f, err := NewFilter(filter)
		if err == nil {
			f.vars = o.Vars
		}
		return f, err
	}
	plain, err := NewFilter(filter)
	if err != nil {
		return nil, err
	}
	keyed, err := collateFilter(filter, o.Collation)
	if err != nil {
		return nil, err
	}
	f, err := NewFilter(keyed)
	if err != nil {
		return nil, err
	}
	f.spec, f.vars, f.coll, f.plain = filter, collatedVars(o.Vars, o.Collation), o.Collation, plain
	return f, nil
}

// CheckExprVars checks that the $expr clauses of a filter, where MongoDB
// allows them (at the top level and under $and, $or and $nor), read only
// variables defined in vars or builtins (17276 otherwise).
func CheckExprVars(filter bson.D, vars map[string]any) error {
	for _, e := range filter {
		switch e.Key {
		case "$expr":
			if err := expr.CheckDefined(e.Value, vars); err != nil {
				return err
			}
		case "$and", "$or", "$nor":
			for _, d := range Clauses(e.Value) {
				if err := CheckExprVars(d, vars); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Clauses returns the documents of a $and, $or or $nor array, skipping
// anything else (the filter parser reports those).
func Clauses(v any) []bson.D {
	a, _ := v.(bson.A)
	out := make([]bson.D, 0, len(a))
	for _, x := range a {
		if d, ok := x.(bson.D); ok {
			out = append(out, d)
		}
	}
	return out
}

// collateFilter returns filter with its comparison operands keyed.
func collateFilter(filter bson.D, c Collator) (bson.D, error) {
	out := make(bson.D, len(filter))
	for i, e := range filter {
		out[i] = e
		switch {
		case e.Key == "$and" || e.Key == "$or" || e.Key == "$nor":
			subs := bson.A{}
			for _, d := range Clauses(e.Value) {
				k, err := collateFilter(d, c)
				if err != nil {
					return nil, err
				}
				subs = append(subs, k)
			}
			out[i].Value = subs
		case len(e.Key) > 0 && e.Key[0] == '$':
			// $expr stays as written: it reads the original document and
			// compares under the collation its variables carry.
		case opsDoc(e.Value):
			out[i].Value = collateOps(e.Value.(bson.D), c)
		default:
			out[i].Value = c.Value(e.Value)
		}
	}
	return out, nil
}

func opsDoc(v any) bool {
	d, ok := v.(bson.D)
	return ok && len(d) > 0 && len(d[0].Key) > 0 && d[0].Key[0] == '$'
}

func collateOps(ops bson.D, c Collator) bson.D {
	out := make(bson.D, len(ops))
	for i, op := range ops {
		out[i] = op
		switch op.Key {
		case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all":
			out[i].Value = c.Value(op.Value)
		case "$not":
			if d, ok := op.Value.(bson.D); ok {
				out[i].Value = collateOps(d, c)
			}
		case "$elemMatch":
			d, _ := op.Value.(bson.D)
			if opsDoc(d) {
				out[i].Value = collateOps(d, c)
			} else if k, err := collateFilter(d, c); err == nil {
				out[i].Value = k
			}
		}
	}
	return out
}

// collatedVars are vars with the collation that $expr applies (a copy:
// the command's variables may serve other filters).
func collatedVars(vars map[string]any, c Collator) map[string]any {
	out := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		out[k] = v
	}
	return expr.WithCollation(out, c)
}
