package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func parseElemMatchOp(a opArgs) (fieldOp, error) {
	return parseElemMatch(a.name, a.e.Value)
}

// parseElemMatch chooses between $elemMatch's two forms as MongoDB does:
// the value form when the argument is an operator document whose first
// operator takes a path ({$gt: 1}), the query form otherwise ({b: 1},
// {$or: [...]}, and also {} and DBRef-like documents).
func parseElemMatch(name string, v any) (fieldOp, error) {
	d, ok := asDoc(v)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$elemMatch needs an Object")
	}
	if isOperatorDoc(d, true) && pathlessOperator(d[0].Key) == nil {
		ops, err := parseOperators("", d, levelSub)
		if err != nil {
			return nil, err
		}
		return &elemMatchValOp{ops: asAndOp(ops)}, nil
	}
	sub, err := parseFilterDoc(d, levelSub)
	if err != nil {
		return nil, err
	}
	return &elemMatchObjOp{sub: sub}, nil
}

func asAndOp(op fieldOp) andOp {
	if and, ok := op.(andOp); ok {
		return and
	}
	return andOp{op}
}

// parseAll parses $all: the AND of equalities (or regex matches) with each
// listed value, or of $elemMatch queries; an empty list matches nothing.
func parseAll(a opArgs) (fieldOp, error) {
	arr, ok := asArray(a.e.Value)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$all needs an array")
	}
	if len(arr) == 0 {
		return falseOp{}, nil
	}
	if isElemMatchDoc(arr[0]) {
		return parseAllElemMatch(a.name, arr)
	}
	ops := make(andOp, 0, len(arr))
	for _, v := range arr {
		op, err := allElement(a.name, v)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func allElement(name string, v any) (fieldOp, error) {
	if re, ok := v.(bson.Regex); ok {
		return newRegexOp(re.Pattern, re.Options)
	}
	if d, ok := asDoc(v); ok && len(d) > 0 && pathOperator(d[0].Key) != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "no $ expressions in $all")
	}
	return newComparison(cmpEQ, name, v)
}

func isElemMatchDoc(v any) bool {
	d, ok := asDoc(v)
	return ok && len(d) > 0 && d[0].Key == "$elemMatch"
}

// parseAllElemMatch parses {$all: [{$elemMatch: ...}, ...]}; as in MongoDB,
// fields after $elemMatch in each element are ignored.
func parseAllElemMatch(name string, arr bson.A) (fieldOp, error) {
	ops := make(andOp, 0, len(arr))
	for _, v := range arr {
		if !isElemMatchDoc(v) {
			return nil, mongoerr.New(mongoerr.BadValue, "$all/$elemMatch has to be consistent")
		}
		d, _ := asDoc(v)
		op, err := parseElemMatch(name, d[0].Value)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}
