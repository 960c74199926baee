package query

import (
	"errors"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// subObject parses {key: {...}}: a find operator or aggregation
// expression when it has one '$' field, a nested projection otherwise.
func (p *projParser) subObject(node *projNode, key string, d bson.D, atRoot bool) error {
	if len(d) == 1 && strings.HasPrefix(d[0].Key, "$") {
		handled, err := p.expression(node, key, d, atRoot)
		if handled || err != nil {
			return err
		}
		return mongoerr.Newf(mongoerr.Location31325, "Unknown expression %s", d[0].Key)
	}
	if err := validateFieldPath(key); err != nil {
		return err
	}
	if len(d) == 0 {
		return mongoerr.New(mongoerr.Location51270, "An empty sub-projection is not a valid value. Found empty object at path")
	}
	sub, err := subNodeAt(node, key)
	if err != nil {
		return err
	}
	for _, e := range d {
		if err := p.element(sub, e, false); err != nil {
			return err
		}
	}
	return nil
}

// subNodeAt returns the nested projection at path, creating it or
// merging into one made by an earlier field ({"a.b": 1, a: {c: 1}}).
func subNodeAt(node *projNode, path string) (*projNode, error) {
	parts := strings.Split(path, ".")
	for i, part := range parts {
		f := node.find(part)
		switch {
		case f == nil:
			f = &projField{name: part, kind: projSub, sub: &projNode{}}
			node.fields = append(node.fields, f)
		case f.kind != projSub && i == len(parts)-1:
			return nil, mongoerr.Newf(mongoerr.Location31250, "Path collision at %s", path)
		case f.kind != projSub:
			return nil, mongoerr.Newf(mongoerr.Location31249, "Path collision at %s remaining portion %s", path, strings.Join(parts[1:], "."))
		}
		node = f.sub
	}
	return node, nil
}

// expression parses {key: {$op: arg}}. It reports false when $op names no
// operator at all, which MongoDB then rejects as an unknown expression.
func (p *projParser) expression(node *projNode, key string, d bson.D, atRoot bool) (bool, error) {
	switch d[0].Key {
	case "$slice":
		return true, p.slice(node, key, d[0].Value)
	case "$elemMatch":
		return true, p.elemMatch(node, key, d[0].Value, atRoot)
	case "$meta":
		return true, mongoerr.New(mongoerr.NotImplemented, "$meta is not supported by Mayfly: it has no text search")
	}
	x, err := expr.Compile(d)
	if isUnknownOperator(err, d[0].Key) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if p.typ == typeExclusion {
		return true, mongoerr.New(mongoerr.Location31252, "Cannot use expression other than $meta in exclusion projection")
	}
	return true, p.addComputed(node, key, &projField{kind: projExpr, expr: x})
}

// isUnknownOperator tells whether err is expr's complaint about op itself
// (not about an unknown operator nested in its arguments).
func isUnknownOperator(err error, op string) bool {
	var me *mongoerr.Error
	return errors.As(err, &me) && me.Code == mongoerr.InvalidPipelineOperator &&
		me.Msg == "Unrecognized expression '"+op+"'"
}

func (p *projParser) addComputed(node *projNode, key string, f *projField) error {
	if err := validateFieldPath(key); err != nil {
		return err
	}
	p.typ = typeInclusion
	return addAtPath(node, key, f)
}

// literal parses {key: value} for a value that is neither a number nor a
// boolean: in MongoDB 4.4+ it is an expression (a literal, "$path", ...).
func (p *projParser) literal(node *projNode, e bson.E) error {
	x, err := expr.Compile(e.Value)
	if err != nil {
		return err
	}
	if p.typ == typeExclusion {
		return mongoerr.Newf(mongoerr.Location31310, "Cannot use an expression %s in an exclusion projection", bsonutil.FormatElem(e.Key, e.Value))
	}
	return p.addComputed(node, e.Key, &projField{kind: projExpr, expr: x})
}

// slice parses find's $slice; a value that is not find syntax may still be
// the aggregation $slice expression, as in MongoDB.
func (p *projParser) slice(node *projNode, key string, v any) error {
	spec, findErr := parseFindSlice(v)
	if findErr == nil {
		if err := validateFieldPath(key); err != nil {
			return err
		}
		p.hasSlice = true
		return addAtPath(node, key, &projField{kind: projSlice, slice: spec})
	}
	x, err := expr.Compile(bson.D{{Key: "$slice", Value: v}})
	if err != nil {
		return sliceSyntaxError(v, findErr, err)
	}
	if p.typ == typeExclusion {
		return mongoerr.New(mongoerr.Location31252, "Cannot use expression other than $meta in exclusion projection")
	}
	return p.addComputed(node, key, &projField{kind: projExpr, expr: x})
}

func sliceSyntaxError(v any, findErr *mongoerr.Error, exprErr error) error {
	me := mongoerr.As(exprErr)
	return mongoerr.Newf(me.Code, "Invalid $slice syntax. The given syntax %s did not match the find() syntax "+
		"because :: %s: %s :: The given syntax did not match the expression $slice syntax. :: caused by :: %s",
		bsonutil.Format(bson.D{{Key: "$slice", Value: v}}), findErr.Code.Name(), findErr.Msg, me.Msg)
}

// parseFindSlice parses find's $slice: n, or [skip, limit] with limit > 0.
func parseFindSlice(v any) (sliceSpec, *mongoerr.Error) {
	if bsonutil.IsNumber(v) {
		return sliceSpec{limit: numberInt(v)}, nil
	}
	arr, ok := asArray(v)
	if !ok {
		return sliceSpec{}, mongoerr.New(mongoerr.Location31273, "$slice only supports numbers and [skip, limit] arrays")
	}
	if len(arr) != 2 {
		return sliceSpec{}, mongoerr.New(mongoerr.Location31272, "$slice array argument should be of form [skip, limit]")
	}
	if !bsonutil.IsNumber(arr[0]) {
		return sliceSpec{}, mongoerr.Newf(mongoerr.Location31257, "$slice expects the skip argument to be a number, got %s",
			bsonutil.TypeName(arr[0]))
	}
	if !bsonutil.IsNumber(arr[1]) {
		return sliceSpec{}, mongoerr.Newf(mongoerr.Location31258, "$slice expects the limit argument to be a number, got %s",
			bsonutil.TypeName(arr[1]))
	}
	limit := numberInt(arr[1])
	if limit <= 0 {
		return sliceSpec{}, mongoerr.Newf(mongoerr.Location31259, "$slice limit must be positive, got %d", limit)
	}
	return sliceSpec{hasSkip: true, skip: numberInt(arr[0]), limit: limit}, nil
}

// numberInt converts a number to int32 range as BSONElement::numberInt:
// truncating, saturating, NaN as 0.
func numberInt(v any) int {
	f := bsonutil.ToFloat(v)
	if n, ok := v.(int32); ok {
		return int(n)
	}
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int(f)
}

func (p *projParser) elemMatch(node *projNode, key string, v any, atRoot bool) error {
	if _, ok := asDoc(v); !ok {
		return mongoerr.Newf(mongoerr.Location31274, "elemMatch: Invalid argument, object required, but got %s", bsonutil.TypeName(v))
	}
	if p.hasPositional {
		return mongoerr.New(mongoerr.Location31255, "Cannot specify positional operator and $elemMatch.")
	}
	if !atRoot || strings.Contains(key, ".") {
		return mongoerr.New(mongoerr.Location31275, "Cannot use $elemMatch projection on a nested field.")
	}
	f, err := NewFilter(bson.D{{Key: key, Value: bson.D{{Key: "$elemMatch", Value: v}}}})
	if err != nil {
		return err
	}
	if err := validateFieldPath(key); err != nil {
		return err
	}
	p.hasElemMatch = true
	return addAtPath(node, key, &projField{kind: projElemMatch, match: f})
}

// positional parses {"path.$": 1}.
func (p *projParser) positional(node *projNode, e bson.E) error {
	if !trueValue(e.Value) {
		return mongoerr.New(mongoerr.Location31395, "positional projection cannot be used with exclusion")
	}
	if p.hasPositional {
		return mongoerr.New(mongoerr.Location31276, "Cannot specify more than one positional projection per query.")
	}
	if p.hasElemMatch {
		return mongoerr.New(mongoerr.Location31256, "Cannot specify positional operator and $elemMatch.")
	}
	prefix := strings.TrimSuffix(e.Key, ".$")
	if err := validateFieldPath(prefix); err != nil {
		return err
	}
	if err := p.setType(typeInclusion, e.Key); err != nil {
		return err
	}
	p.hasPositional = true
	return addAtPath(node, prefix, &projField{kind: projPositional})
}
