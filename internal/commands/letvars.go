package commands

import (
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
	vars map[string]any
}

// parseLet evaluates the command's let, once per command as MongoDB does.
func (h *Handler) parseLet(r *request) (*letScope, error) {
	doc, err := optDoc(r, "let")
	if err != nil {
		return nil, err
	}
	vars, err := expr.EvalLet(doc, h.deps.Clock.Now())
	if err != nil {
		return nil, err
	}
	return &letScope{doc: doc, vars: vars}, nil
}

// filter parses a filter of the command with its variables and the
// collation that applies to it.
func (l *letScope) filter(d bson.D, c *collation.Collation) (*query.Filter, error) {
	return commandFilter(d, l, c)
}
