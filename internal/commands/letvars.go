package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/query"
)

// letScope is a command's let option: the document, which a pipeline-style
// update compiles again, and the values it evaluated to ($$NOW included),
// which the command's $expr clauses read.
type letScope struct {
	doc  bson.D
	vars map[string]any // nil when there is no let: see varsFor
	now  time.Time      // $$NOW
}

// parseLet evaluates the command's let, once per command as MongoDB does.
// Without a let the variables are $$NOW alone, which only a $expr reads:
// varsFor makes them for a filter that has one, so that the commands
// without either (nearly all) build no map.
func (h *Handler) parseLet(r *request) (*letScope, error) {
	var l letScope
	if err := h.readLet(r, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// readLet is parseLet into l, for a caller that keeps the scope in a
// struct or a variable of its own rather than allocate one. l is
// undefined after an error.
func (h *Handler) readLet(r *request, l *letScope) error {
	doc, err := optDoc(r, "let")
	if err != nil {
		return err
	}
	*l = letScope{doc: doc, now: h.deps.Clock.Now()}
	if len(doc) == 0 {
		return nil
	}
	l.vars, err = expr.EvalLet(doc, l.now)
	return err
}

// varsFor is the variables filter d reads: the let's, or without a let
// $$NOW fixed at parseLet's time when d has a $expr, else nil (nothing
// reads them).
func (l *letScope) varsFor(d bson.D) map[string]any {
	if l.vars != nil || !query.HasExpr(d) {
		return l.vars
	}
	vars, _ := expr.EvalLet(nil, l.now) // no let: nothing to fail
	return vars
}

// filter parses a filter of the command with its variables and the
// collation that applies to it.
func (l *letScope) filter(d bson.D, c *collation.Collation) (*query.Filter, error) {
	return commandFilter(d, l, c)
}
