package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
)

// parseExpr parses $expr, an aggregation expression evaluated against the
// whole document; it is not allowed inside $elemMatch.
func parseExpr(e bson.E, lvl parseLevel) (node, error) {
	if err := topLevelOnly(e, lvl); err != nil {
		return nil, err
	}
	x, err := expr.Compile(e.Value)
	if err != nil {
		return nil, err
	}
	return &exprNode{x: x}, nil
}

// exprNode matches when its expression is truthy. An evaluation error
// makes it false and is recorded for MatchErr.
type exprNode struct{ x *expr.Expr }

func (n *exprNode) matches(doc bson.D, c *matchCtx) bool {
	var vars map[string]any
	if c != nil {
		vars = c.vars
		if c.orig != nil {
			doc = c.orig
		}
	}
	v, err := n.x.Eval(doc, vars)
	if err != nil {
		c.fail(err)
		return false
	}
	return expr.Truthy(v)
}
