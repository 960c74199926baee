package query

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// opArgs is what an operator parser gets: the path name (for messages),
// the operator element, its siblings ($regex needs $options) and the level.
type opArgs struct {
	name string
	e    bson.E
	ctx  bson.D
	lvl  parseLevel
}

type opParser func(a opArgs) (fieldOp, error)

// parseOperators parses {$op: arg, ...} applied to one path: the AND of
// its operators.
func parseOperators(name string, d bson.D, lvl parseLevel) (fieldOp, error) {
	if isNearOperator(d[0].Key) {
		return nil, geoUnsupported(d[0].Key)
	}
	if len(d) == 1 { // the usual: no andOp to hold one operator
		return parseOperator(opArgs{name: name, e: d[0], ctx: d, lvl: lvl})
	}
	ops := make(andOp, 0, len(d))
	for _, e := range d {
		op, err := parseOperator(opArgs{name: name, e: e, ctx: d, lvl: lvl})
		if err != nil {
			return nil, err
		}
		if op != nil {
			ops = append(ops, op)
		}
	}
	if len(ops) == 1 {
		return ops[0], nil
	}
	return ops, nil
}

func parseOperator(a opArgs) (fieldOp, error) {
	if parse := pathOperator(a.e.Key); parse != nil {
		return parse(a)
	}
	if a.e.Key == "$where" {
		return nil, mongoerr.New(mongoerr.BadValue, "$where cannot be applied to a field")
	}
	return nil, mongoerr.Newf(mongoerr.BadValue, "unknown operator: %s", a.e.Key)
}

// pathOperator returns the parser of a path-accepting operator, nil if
// name is not one. (A switch: a map would make an initialization cycle.)
func pathOperator(name string) opParser {
	switch name {
	case "$eq", "$lt", "$lte", "$gt", "$gte":
		return parseCmp
	case "$ne":
		return parseNe
	case "$in", "$nin":
		return parseIn
	case "$not":
		return parseNot
	case "$exists":
		return parseExists
	}
	return pathOperator2(name)
}

func pathOperator2(name string) opParser {
	switch name {
	case "$size":
		return parseSize
	case "$type":
		return parseType
	case "$mod":
		return parseMod
	case "$regex", "$options":
		return parseRegexOperator
	case "$elemMatch":
		return parseElemMatchOp
	case "$all":
		return parseAll
	case "$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear":
		return parseBits
	case "$geoWithin", "$within", "$geoIntersects", "$near", "$nearSphere", "$geoNear":
		return parseGeo
	}
	return nil
}

var cmpKinds = map[string]cmpKind{"$eq": cmpEQ, "$lt": cmpLT, "$lte": cmpLTE, "$gt": cmpGT, "$gte": cmpGTE}

func parseCmp(a opArgs) (fieldOp, error) {
	return newComparison(cmpKinds[a.e.Key], a.name, a.e.Value)
}

// newComparison validates a comparison operand as MongoDB does: only
// equality may take a regex (matched as a value, not as a pattern), and
// nothing compares to undefined.
func newComparison(kind cmpKind, name string, v any) (*cmpOp, error) {
	if err := checkComparison(kind, name, v); err != nil {
		return nil, err
	}
	return &cmpOp{kind: kind, rhs: [1]any{v}}, nil
}

// checkComparison is newComparison's validation alone.
func checkComparison(kind cmpKind, name string, v any) error {
	if _, isRe := v.(bson.Regex); isRe && kind != cmpEQ {
		return mongoerr.Newf(mongoerr.BadValue, "Can't have RegEx as arg to predicate over field '%s'.", name)
	}
	if _, isUndef := v.(bson.Undefined); isUndef {
		return mongoerr.New(mongoerr.BadValue, "cannot compare to undefined")
	}
	return nil
}

func parseNe(a opArgs) (fieldOp, error) {
	if _, isRe := a.e.Value.(bson.Regex); isRe {
		return nil, mongoerr.New(mongoerr.BadValue, "Can't have regex as arg to $ne.")
	}
	eq, err := newComparison(cmpEQ, a.name, a.e.Value)
	if err != nil {
		return nil, err
	}
	return notOp{eq}, nil
}

func parseIn(a opArgs) (fieldOp, error) {
	arr, ok := asArray(a.e.Value)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.BadValue, "%s needs an array", a.e.Key)
	}
	in := &inOp{eqs: make([]any, 0, len(arr))}
	for _, v := range arr {
		if err := in.add(v); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(in.eqs, bsonutil.Compare)
	if a.e.Key == "$nin" {
		return notOp{in}, nil
	}
	return in, nil
}

func (o *inOp) add(v any) error {
	if d, ok := asDoc(v); ok && isOperatorDoc(d, false) {
		return mongoerr.New(mongoerr.BadValue, "cannot nest $ under $in")
	}
	switch x := v.(type) {
	case bson.Regex:
		re, err := newRegexOp(x.Pattern, x.Options)
		if err != nil {
			return err
		}
		o.regexes = append(o.regexes, re)
	case bson.Undefined:
		return mongoerr.New(mongoerr.BadValue, "InMatchExpression equality cannot be undefined")
	default:
		o.eqs = append(o.eqs, v)
		o.hasNull = o.hasNull || bsonutil.Rank(v) == bsonutil.RankNull
	}
	return nil
}

// parseNot parses $not: a regex, or a non-empty operator document.
func parseNot(a opArgs) (fieldOp, error) {
	if re, ok := a.e.Value.(bson.Regex); ok {
		op, err := newRegexOp(re.Pattern, re.Options)
		if err != nil {
			return nil, err
		}
		return notOp{op}, nil
	}
	d, ok := asDoc(a.e.Value)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$not needs a regex or a document")
	}
	if len(d) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "$not cannot be empty")
	}
	op, err := parseOperators(a.name, d, a.lvl)
	if err != nil {
		return nil, err
	}
	return notOp{op}, nil
}

func parseExists(a opArgs) (fieldOp, error) {
	if trueValue(a.e.Value) {
		return existsOp{}, nil
	}
	return notOp{existsOp{}}, nil
}

// parseSize accepts a non-negative integer in int range, as MongoDB's
// parseIntegerElementToNonNegativeInt.
func parseSize(a opArgs) (fieldOp, error) {
	n, perr := parseInteger(a.e.Key, a.e.Value)
	if perr != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Failed to parse $size. "+perr.Msg)
	}
	elem := bsonutil.FormatElem(a.e.Key, a.e.Value)
	if n > math.MaxInt32 || n < math.MinInt32 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Failed to parse $size. Cannot represent %s in an int", elem)
	}
	if n < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Failed to parse $size. Expected a non-negative number in: %s", elem)
	}
	return &sizeOp{n: n}, nil
}

func parseMod(a opArgs) (fieldOp, error) {
	arr, ok := asArray(a.e.Value)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, needs to be an array")
	}
	if err := checkModShape(arr); err != nil {
		return nil, err
	}
	div, err := coerceToInt64(arr[0])
	if err != nil {
		return nil, mongoerr.New(err.Code, "malformed mod, divisor value is invalid :: caused by :: "+err.Msg)
	}
	rem, err := coerceToInt64(arr[1])
	if err != nil {
		return nil, mongoerr.New(err.Code, "malformed mod, remainder value is invalid :: caused by :: "+err.Msg)
	}
	if div == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "divisor cannot be 0")
	}
	return &modOp{divisor: div, remainder: rem}, nil
}

// checkModShape checks $mod's array in MongoDB's order, which decides
// which message a malformed array gets.
func checkModShape(arr bson.A) error {
	bad := func(msg string) error { return mongoerr.New(mongoerr.BadValue, "malformed mod, "+msg) }
	switch {
	case len(arr) == 0:
		return bad("not enough elements")
	case !bsonutil.IsNumber(arr[0]):
		return bad("divisor not a number")
	case len(arr) == 1:
		return bad("not enough elements")
	case !bsonutil.IsNumber(arr[1]):
		return bad("remainder not a number")
	case len(arr) > 2:
		return bad("too many elements")
	}
	return nil
}

func parseGeo(a opArgs) (fieldOp, error) {
	if isNearOperator(a.e.Key) {
		// Only reached when $near is not the first operator.
		return nil, mongoerr.Newf(mongoerr.BadValue, "near must be first in: %s", bsonutil.Format(a.ctx))
	}
	return nil, geoUnsupported(a.e.Key)
}

func isNearOperator(name string) bool {
	return name == "$near" || name == "$nearSphere" || name == "$geoNear"
}

func geoUnsupported(op string) error {
	return mongoerr.Newf(mongoerr.NotImplemented, "%s is not supported by Mayfly: it has no geospatial queries", op)
}
