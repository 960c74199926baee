package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
)

// Guarded returns a Filter whose $expr evaluations stop when g's context
// ends (maxTimeMS, killOp), instead of running a long expression to its
// end on each document; an interrupted $expr does not match, and the scan
// reports the interruption at its next check. A filter without $expr is
// returned as it is.
func (f *Filter) Guarded(g *expr.Guard) *Filter {
	if !f.usesExpr {
		return f
	}
	out := *f
	vars := make(map[string]any, len(f.vars)+1) // the command's let variables stay
	for k, v := range f.vars {
		vars[k] = v
	}
	out.vars = expr.WithGuard(vars, g)
	return &out
}

// UsesExpr reports whether the filter has a $expr anywhere: only then
// does Guarded use its Guard, so a caller can spare making one.
func (f *Filter) UsesExpr() bool { return f.usesExpr }

// HasExpr reports whether a filter document uses $expr anywhere: only
// then does the filter read variables.
func HasExpr(filter bson.D) bool { return hasExpr(filter) }

// hasExpr reports whether a filter document uses $expr anywhere.
func hasExpr(v any) bool {
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			if e.Key == "$expr" || hasExpr(e.Value) {
				return true
			}
		}
	case bson.A:
		for _, e := range x {
			if hasExpr(e) {
				return true
			}
		}
	}
	return false
}
