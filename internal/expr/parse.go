package expr

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// compile turns one expression value into a node.
func compile(v any) (node, error) {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "$") {
			return compileFieldPath(x)
		}
	case bson.D:
		return compileDoc(x)
	case bson.M, bson.Raw:
		return compileDoc(asDocument(x))
	case bson.A:
		return compileArray(x)
	case []any:
		return compileArray(bson.A(x))
	case int:
		return constNode{normalizeInt(x)}, nil
	}
	return constNode{v}, nil
}

// normalizeInt maps Go's int, which BSON does not have, to int32 or int64.
func normalizeInt(i int) any {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return int32(i)
	}
	return int64(i)
}

// compileDoc compiles an operator document or an object expression.
func compileDoc(d bson.D) (node, error) {
	if len(d) > 0 && strings.HasPrefix(d[0].Key, "$") {
		if len(d) != 1 {
			return nil, mongoerr.Newf(mongoerr.Location15983,
				"An object representing an expression must have exactly one field: %s", formatValue(d))
		}
		return compileOperator(d[0].Key, d[0].Value)
	}
	return compileObject(d)
}

// objectNode builds a document; fields evaluating to missing are left out.
type objectNode struct {
	keys []string
	vals []node
}

func (n *objectNode) eval(c *ctx) (any, error) {
	out := make(bson.D, 0, len(n.keys))
	for i, k := range n.keys {
		v, err := n.vals[i].eval(c)
		if err != nil {
			return nil, err
		}
		if !IsMissing(v) {
			out = append(out, bson.E{Key: k, Value: v})
		}
	}
	return out, nil
}

func compileObject(d bson.D) (node, error) {
	n := &objectNode{}
	seen := make(map[string]bool, len(d))
	for _, e := range d {
		if err := ValidateFieldName(e.Key); err != nil {
			return nil, err
		}
		if seen[e.Key] {
			return nil, mongoerr.Newf(mongoerr.Location16406,
				"duplicate field name specified in object literal: %s", formatValue(d))
		}
		seen[e.Key] = true
		v, err := compile(e.Value)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, e.Key)
		n.vals = append(n.vals, v)
	}
	return n, nil
}

// ValidateFieldName applies MongoDB's rules for one field name of an
// expression object or output path: not empty, no leading '$', no '.'.
func ValidateFieldName(name string) error {
	switch {
	case name == "":
		return mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
	case strings.HasPrefix(name, "$"):
		return mongoerr.New(mongoerr.Location16410,
			"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	case strings.Contains(name, "."):
		return mongoerr.New(mongoerr.Location16412,
			"FieldPath field names may not contain '.'. Consider using $getField or $setField.")
	case strings.ContainsRune(name, 0):
		return mongoerr.New(mongoerr.Location16411, "FieldPath field names may not contain null bytes")
	}
	return nil
}

// arrayNode builds an array; elements evaluating to missing become null.
type arrayNode struct{ elems []node }

func (n *arrayNode) eval(c *ctx) (any, error) {
	out := make(bson.A, len(n.elems))
	for i, e := range n.elems {
		v, err := e.eval(c)
		if err != nil {
			return nil, err
		}
		if IsMissing(v) {
			v = nil
		}
		out[i] = v
	}
	return out, nil
}

func compileArray(a bson.A) (node, error) {
	elems, err := compileAll(a)
	if err != nil {
		return nil, err
	}
	return &arrayNode{elems: elems}, nil
}

// compileAll compiles each element of a.
func compileAll(a bson.A) ([]node, error) {
	out := make([]node, len(a))
	for i, x := range a {
		n, err := compile(x)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// compileOperator looks name up in the operator table.
func compileOperator(name string, arg any) (node, error) {
	op, ok := operators[name]
	if !ok {
		return nil, mongoerr.Newf(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", name)
	}
	n, err := op(name, arg)
	if _, literal := n.(constNode); err != nil || literal {
		return n, err // a literal ($literal) does no work to count
	}
	return counted{n}, nil
}

// counted is every operator's node: each evaluation counts a step on the
// operation's Guard before it runs, so however an expression is built
// (many cheap operators, or one applied to each of many documents) it
// stops at its next operator once the operation ends.
type counted struct{ n node }

func (c counted) eval(cx *ctx) (any, error) {
	if err := cx.step(); err != nil {
		return nil, err
	}
	return c.n.eval(cx)
}

// asDocument returns v as a bson.D, or nil if v is not a document.
func asDocument(v any) bson.D {
	switch d := v.(type) {
	case bson.D:
		return d
	case bson.M, bson.Raw:
		return toD(d)
	}
	return nil
}

// isDocument reports whether v is a BSON document.
func isDocument(v any) bool {
	switch v.(type) {
	case bson.D, bson.M, bson.Raw:
		return true
	}
	return false
}
