package query

import (
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// parseLevel tells whether a filter document applies to the whole document
// or to an array element inside $elemMatch, where $expr, $where, $text and
// $sampleRate are not allowed.
type parseLevel int

const (
	levelTop parseLevel = iota
	levelSub
)

// parseFilterDoc parses a filter document: an implicit AND of its fields.
func parseFilterDoc(d bson.D, lvl parseLevel) (node, error) {
	if len(d) == 1 { // the usual: no andNode to hold one field
		return parseOnly(d[0], lvl)
	}
	nodes := make(andNode, 0, len(d))
	for _, e := range d {
		n, err := parseFilterElem(e, lvl)
		if err != nil {
			return nil, err
		}
		if n != nil {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 1 {
		return nodes[0], nil
	}
	return nodes, nil
}

// parseOnly is parseFilterDoc of a document of one field e.
func parseOnly(e bson.E, lvl parseLevel) (node, error) {
	n, err := parseFilterElem(e, lvl)
	switch {
	case err != nil:
		return nil, err
	case n == nil: // {$comment: ...}: matches everything
		return andNode{}, nil
	}
	return n, nil
}

func parseFilterElem(e bson.E, lvl parseLevel) (node, error) {
	if strings.HasPrefix(e.Key, "$") {
		return parsePathless(e, lvl)
	}
	if isEquality(e.Value) {
		return newEqualityNode(e.Key, e.Value)
	}
	op, err := parseFieldValue(e.Key, e.Value, lvl)
	if err != nil {
		return nil, err
	}
	return newFieldNode(e.Key, op), nil
}

// isEquality reports whether {name: v} is a plain equality: v is neither
// an operator document nor a regex (parseFieldValue).
func isEquality(v any) bool {
	if d, ok := asDoc(v); ok && isOperatorDoc(d, false) {
		return false
	}
	_, isRe := v.(bson.Regex)
	return !isRe
}

// newEqualityNode is newFieldNode of {name: v}'s equality, with the
// comparison kept in the node: one allocation for the usual filter field.
func newEqualityNode(name string, v any) (*fieldNode, error) {
	n := new(fieldNode)
	if err := n.initEquality(name, v); err != nil {
		return nil, err
	}
	return n, nil
}

// initEquality makes the zero n the node of {name: v}'s equality.
func (n *fieldNode) initEquality(name string, v any) error {
	if err := checkComparison(cmpEQ, name, v); err != nil {
		return err
	}
	n.name, n.cmp = name, cmpOp{kind: cmpEQ, rhs: [1]any{v}}
	n.setOp(&n.cmp)
	return nil
}

// newFieldNode is the node of {name: op}.
func newFieldNode(name string, op fieldOp) *fieldNode {
	n := &fieldNode{name: name}
	n.setOp(op)
	return n
}

// setOp sets the node's operator, and its path from name. A path of one
// component, the usual, is kept in the node itself: strings.Split would
// allocate it. A comparison's predicate is made here for the same reason
// (Filter.predicates).
func (n *fieldNode) setOp(op fieldOp) {
	n.op = op
	if strings.Contains(n.name, ".") {
		n.path = strings.Split(n.name, ".")
	} else {
		n.one[0] = n.name
		n.path = n.one[:]
	}
	if c, ok := op.(*cmpOp); ok {
		n.pred[0], _ = predicateOf(n.name, c)
	}
}

// parseFieldValue parses the value of {name: value}: an operator document,
// a regex to match, or a value to be equal to.
func parseFieldValue(name string, v any, lvl parseLevel) (fieldOp, error) {
	if d, ok := asDoc(v); ok && isOperatorDoc(d, false) {
		return parseOperators(name, d, lvl)
	}
	if re, ok := v.(bson.Regex); ok {
		return newRegexOp(re.Pattern, re.Options)
	}
	return newComparison(cmpEQ, name, v)
}

// isOperatorDoc is MongoDB's isExpressionDocument: a non-empty document
// whose first field starts with '$' and which is not a DBRef ({$ref, $id},
// or with allowIncompleteDBRef any of $ref, $id, $db).
func isOperatorDoc(d bson.D, allowIncompleteDBRef bool) bool {
	if len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
		return false
	}
	return !isDBRef(d, allowIncompleteDBRef)
}

func isDBRef(d bson.D, allowIncomplete bool) bool {
	_, hasRef := bsonutil.Lookup(d, "$ref")
	_, hasID := bsonutil.Lookup(d, "$id")
	_, hasDB := bsonutil.Lookup(d, "$db")
	if allowIncomplete {
		return hasRef || hasID || hasDB
	}
	return hasRef && hasID
}

// parseTree parses $and, $or and $nor.
func parseTree(e bson.E, lvl parseLevel) (node, error) {
	arr, ok := asArray(e.Value)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.BadValue, "%s must be an array", e.Key)
	}
	if len(arr) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "$and/$or/$nor must be a nonempty array")
	}
	children := make([]node, len(arr))
	for i, v := range arr {
		d, ok := asDoc(v)
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "$or/$and/$nor entries need to be full objects")
		}
		child, err := parseFilterDoc(d, lvl)
		if err != nil {
			return nil, err
		}
		children[i] = child
	}
	switch e.Key {
	case "$or":
		return orNode(children), nil
	case "$nor":
		return norNode(children), nil
	}
	return andNode(children), nil
}

// pathlessParser parses a top-level operator such as $and or $expr.
type pathlessParser func(e bson.E, lvl parseLevel) (node, error)

// pathlessOperator returns the parser of an operator that takes no path,
// from MongoDB's table; nil if name is not one. (A switch rather than a
// map: a map would make an initialization cycle through parseTree.)
func pathlessOperator(name string) pathlessParser {
	switch name {
	case "$and", "$or", "$nor":
		return parseTree
	case "$comment":
		return func(bson.E, parseLevel) (node, error) { return nil, nil }
	case "$expr":
		return parseExpr
	case "$where":
		return parseWhere
	case "$text":
		return parseText
	case "$jsonSchema":
		return parseJSONSchema
	case "$alwaysTrue", "$alwaysFalse":
		return parseAlwaysBoolean
	case "$sampleRate":
		return parseSampleRate
	case "$id", "$ref", "$db":
		return parseDBRefField
	}
	return nil
}

func parsePathless(e bson.E, lvl parseLevel) (node, error) {
	if parse := pathlessOperator(e.Key); parse != nil {
		return parse(e, lvl)
	}
	hint := ". If you have a field name that starts with a '$' symbol, consider using $getField or $setField."
	if e.Key == "$not" {
		hint = ". If you are trying to negate an entire expression, use $nor."
	}
	return nil, mongoerr.Newf(mongoerr.BadValue, "unknown top level operator: %s%s", e.Key, hint)
}

// topLevelOnly rejects operators that need the whole document inside
// $elemMatch.
func topLevelOnly(e bson.E, lvl parseLevel) error {
	if lvl == levelSub {
		return mongoerr.Newf(mongoerr.BadValue, "%s can only be applied to the top-level document", e.Key)
	}
	return nil
}

func parseWhere(e bson.E, lvl parseLevel) (node, error) {
	if err := topLevelOnly(e, lvl); err != nil {
		return nil, err
	}
	return nil, mongoerr.New(mongoerr.NotImplemented,
		"$where is not supported by Mayfly: it has no JavaScript engine; use $expr")
}

// parseText answers as MongoDB does for a collection without a text
// index, which in Mayfly is every collection.
func parseText(e bson.E, lvl parseLevel) (node, error) {
	if err := topLevelOnly(e, lvl); err != nil {
		return nil, err
	}
	return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
}

func parseJSONSchema(e bson.E, _ parseLevel) (node, error) {
	if _, ok := asDoc(e.Value); !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
	}
	return nil, mongoerr.New(mongoerr.NotImplemented, "$jsonSchema is not supported by Mayfly")
}

func parseAlwaysBoolean(e bson.E, _ parseLevel) (node, error) {
	n, err := parseInteger(e.Key, e.Value)
	if err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "%s must be an integer value of 1", e.Key)
	}
	return constNode(e.Key == "$alwaysTrue"), nil
}

func parseSampleRate(e bson.E, lvl parseLevel) (node, error) {
	if err := topLevelOnly(e, lvl); err != nil {
		return nil, err
	}
	if !bsonutil.IsNumber(e.Value) {
		return nil, mongoerr.New(mongoerr.BadValue, "argument to $sampleRate must be a numeric type")
	}
	x := bsonutil.ToFloat(e.Value)
	if !(x >= 0 && x <= 1) { // written so that NaN is rejected too
		return nil, mongoerr.New(mongoerr.BadValue, "numeric argument to $sampleRate must be in [0, 1]")
	}
	if x == 0 || x == 1 {
		return constNode(x == 1), nil
	}
	return sampleNode(x), nil
}

// sampleNode matches each document with probability p, as MongoDB's
// {$expr: {$lt: [{$rand: {}}, p]}} rewrite of $sampleRate.
type sampleNode float64

func (n sampleNode) matches(bson.D, *matchCtx) bool { return rand.Float64() < float64(n) }

// parseDBRefField handles top-level $id, $ref and $db, which MongoDB
// treats as equality on the field of that name (inside DBRef documents).
func parseDBRefField(e bson.E, _ parseLevel) (node, error) {
	op, err := newComparison(cmpEQ, e.Key, e.Value)
	if err != nil {
		return nil, err
	}
	return &fieldNode{name: e.Key, path: []string{e.Key}, op: op}, nil
}
