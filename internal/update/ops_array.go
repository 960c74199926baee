package update

import (
	"slices"

	"github.com/mayflydb/mayfly/internal/bsonutil"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// addToSetMod is $addToSet, with or without $each; its values are
// deduplicated up front, keeping first occurrences.
type addToSetMod struct {
	values bson.A
	cmp    func(a, b any) int
}

func parseAddToSet(v any, cmp func(a, b any) int) (modifier, error) {
	values := bson.A{v}
	if d := docOf(v); kindOf(v) == kindDoc && len(d) > 0 && d[0].Key == "$each" {
		if kindOf(d[0].Value) != kindArr {
			return nil, errf(mongoerr.TypeMismatch,
				"The argument to $each in $addToSet must be an array but it was of type %s",
				typeName(d[0].Value))
		}
		if len(d) > 1 {
			return nil, errf(mongoerr.BadValue, "Found unexpected fields after $each in $addToSet: %s",
				formatValue(d))
		}
		values = arrOf(d[0].Value)
	}
	return addToSetMod{values: dedupe(values, cmp), cmp: cmp}, nil
}

// dedupe keeps the first of each run of equal values, in their order. A
// stable sort of their positions puts equal values side by side, first
// occurrence first, so the cost is n log n, not a scan per value.
func dedupe(values bson.A, cmp func(a, b any) int) bson.A {
	plainVals := plainAll(values)
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp(plainVals[i], plainVals[j]) })
	keep := make([]bool, len(values))
	for k, i := range order {
		keep[i] = k == 0 || cmp(plainVals[order[k-1]], plainVals[i]) != 0
	}
	var out bson.A
	for i, v := range values {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

// sortedValues answers "is v among these values?" in log n comparisons,
// which keeps $addToSet with $each and $pullAll at n log n in the sizes of
// the array and the list rather than their product.
type sortedValues struct {
	vals []any
	cmp  func(a, b any) int
}

func newSortedValues(values bson.A, cmp func(a, b any) int) sortedValues {
	vals := plainAll(values)
	slices.SortFunc(vals, cmp)
	return sortedValues{vals: vals, cmp: cmp}
}

func (s sortedValues) contains(v any) bool {
	_, ok := slices.BinarySearchFunc(s.vals, plainIfOwned(v), s.cmp)
	return ok
}

// plainAll converts owned containers once, not at every comparison.
func plainAll(values bson.A) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = plainIfOwned(v)
	}
	return out
}

func (m addToSetMod) modify(_ *applier, st *state) (any, bool, error) {
	arr, ok := st.elem.(*marr)
	if !ok {
		return nil, false, errf(mongoerr.BadValue,
			"Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s",
			st.name(), typeName(st.elem))
	}
	out := slices.Clone(arr.a)
	have := newSortedValues(arr.a, m.cmp)
	for _, v := range m.values {
		if !have.contains(v) {
			out = append(out, v)
		}
	}
	return &marr{a: out}, len(out) > len(arr.a), nil
}

func (m addToSetMod) create(*applier) (any, bool, error) {
	return &marr{a: append(bson.A{}, m.values...)}, true, nil
}

// popMod is $pop: 1 removes the last element, -1 the first.
type popMod struct{ front bool }

func parsePop(field string, v any) (modifier, error) {
	n, err := parseIntegerArg(field, v)
	if err != nil {
		return nil, err
	}
	if n != 1 && n != -1 {
		return nil, errf(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %d", n)
	}
	return popMod{front: n == -1}, nil
}

// parseIntegerArg is MongoDB's BSONElement::parseIntegerElementToLong,
// messages included.
func parseIntegerArg(field string, v any) (int64, error) {
	if n, ok := integerValue(v); ok {
		return n, nil
	}
	elem := formatElem(field, v)
	switch f, isFloat := v.(float64); {
	case !bsonutil.IsNumber(v):
		return 0, errf(mongoerr.FailedToParse, "Expected a number in: %s", elem)
	case isFloat && f != f:
		return 0, errf(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", elem)
	case isFloat && (f >= 0x1p63 || f < -0x1p63), !isFloat:
		return 0, errf(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", elem)
	}
	return 0, errf(mongoerr.FailedToParse, "Expected an integer: %s", elem)
}

func (m popMod) modify(_ *applier, st *state) (any, bool, error) {
	arr, ok := st.elem.(*marr)
	if !ok {
		return nil, false, errf(mongoerr.TypeMismatch,
			"Path '%s' contains an element of non-array type '%s'", joinPath(st.taken), typeName(st.elem))
	}
	if len(arr.a) == 0 {
		return nil, false, nil
	}
	if m.front {
		return &marr{a: slices.Clone(arr.a[1:])}, true, nil
	}
	return &marr{a: slices.Clone(arr.a[:len(arr.a)-1])}, true, nil
}

func (popMod) create(*applier) (any, bool, error) { return nil, false, nil }

// cullMod is $pull and $pullAll: remove the elements that match.
type cullMod struct{ match func(any) bool }

func (m cullMod) modify(_ *applier, st *state) (any, bool, error) {
	arr, ok := st.elem.(*marr)
	if !ok {
		return nil, false, errf(mongoerr.BadValue, "Cannot apply $pull to a non-array value")
	}
	out := slices.DeleteFunc(slices.Clone(arr.a), m.match)
	return &marr{a: out}, len(out) < len(arr.a), nil
}

func (cullMod) create(*applier) (any, bool, error) { return nil, false, nil }

func parsePullAll(v any, cmp func(a, b any) int) (modifier, error) {
	if kindOf(v) != kindArr {
		return nil, errf(mongoerr.BadValue, "$pullAll requires an array argument but was given a %s",
			typeName(v))
	}
	values := newSortedValues(arrOf(v), cmp)
	return cullMod{match: values.contains}, nil
}
