package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

type matchStage struct {
	spec    bson.D
	filter  *query.Filter
	hasExpr bool
}

func parseMatch(spec any, opt Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15959, "the match filter must be an expression in an object")
	}
	f, err := query.NewFilter(d)
	if err == nil && opt.Collation != nil {
		f, err = query.NewFilterWith(d, query.FilterOptions{Collation: opt.Collation})
	}
	if err != nil {
		return nil, err
	}
	return &matchStage{spec: d, filter: f, hasExpr: hasExpr(d)}, nil
}

func (s *matchStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	f := s.filter
	if s.hasExpr {
		// query.Filter evaluates $expr without variables, so the run's
		// variables ($$NOW, let, $lookup's let) are bound in as literals.
		var err error
		if f, err = query.NewFilter(bindExprVars(s.spec, rc.variables())); err != nil {
			in.Close()
			return nil, err
		}
	}
	// The iterator may outlive the command (a cursor): it keeps the
	// compiled filter, not the stage's document.
	return &filterIter{in: in, f: f.Lean()}, nil
}

type filterIter struct {
	in Iterator
	f  *query.Filter
}

func (it *filterIter) Next() (bson.D, bool, error) {
	for {
		doc, ok, err := it.in.Next()
		if err != nil || !ok {
			return nil, false, err
		}
		match, err := it.f.MatchErr(doc)
		if err != nil {
			return nil, false, err
		}
		if match {
			return doc, true, nil
		}
	}
}

func (it *filterIter) Close() error { return it.in.Close() }

// hasExpr reports whether a filter uses $expr at its top level or under
// $and/$or/$nor, the only places MongoDB allows it.
func hasExpr(filter bson.D) bool {
	for _, e := range filter {
		if e.Key == "$expr" {
			return true
		}
		if isLogical(e.Key) {
			for _, sub := range asDocs(e.Value) {
				if hasExpr(sub) {
					return true
				}
			}
		}
	}
	return false
}

func isLogical(k string) bool { return k == "$and" || k == "$or" || k == "$nor" }

func asDocs(v any) []bson.D { return query.Clauses(v) }

// bindExprVars returns filter with every $$var reference inside its $expr
// clauses replaced by the variable's value as a {$literal: ...}.
func bindExprVars(filter bson.D, vars map[string]any) bson.D {
	out := make(bson.D, len(filter))
	for i, e := range filter {
		out[i] = e
		switch {
		case e.Key == "$expr":
			out[i].Value = substituteVars(e.Value, vars)
		case isLogical(e.Key):
			out[i].Value = bindLogical(e.Value, vars)
		}
	}
	return out
}

func bindLogical(v any, vars map[string]any) any {
	a, ok := v.(bson.A)
	if !ok {
		return v
	}
	out := make(bson.A, len(a))
	for i, x := range a {
		if d, ok := x.(bson.D); ok {
			out[i] = bindExprVars(d, vars)
		} else {
			out[i] = x
		}
	}
	return out
}

// substituteVars rewrites an expression's references to the run's
// variables. Builtins that depend on the document ($$ROOT, $$CURRENT) and
// names not in vars (such as $$this inside $map) are left alone.
func substituteVars(v any, vars map[string]any) any {
	switch x := v.(type) {
	case string:
		return substituteRef(x, vars)
	case bson.D:
		if len(x) == 1 && x[0].Key == "$literal" {
			return x
		}
		out := make(bson.D, len(x))
		for i, e := range x {
			out[i] = bson.E{Key: e.Key, Value: substituteVars(e.Value, vars)}
		}
		return out
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = substituteVars(e, vars)
		}
		return out
	}
	return v
}

func substituteRef(s string, vars map[string]any) any {
	if !strings.HasPrefix(s, "$$") {
		return s
	}
	name, _, _ := strings.Cut(s[2:], ".")
	if _, ok := vars[name]; !ok {
		return s
	}
	e, err := expr.Compile(s)
	if err != nil {
		return s
	}
	val, err := e.Eval(bson.D{}, vars)
	if err != nil {
		return s
	}
	if expr.IsMissing(val) {
		return "$$REMOVE"
	}
	return bson.D{{Key: "$literal", Value: val}}
}

// pushdownFilter is filter without its top-level $expr clauses and the
// logical clauses containing one; nil if nothing is left.
func pushdownFilter(filter bson.D) bson.D {
	var out bson.D
	for _, e := range filter {
		if e.Key == "$expr" || (isLogical(e.Key) && hasExpr(bson.D{e})) {
			continue
		}
		out = append(out, e)
	}
	return out
}
