package expr

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addSetOps(m map[string]compileFn) {
	m["$setUnion"] = variadic(evalSetUnion)
	m["$setIntersection"] = variadic(evalSetIntersection)
	m["$setDifference"] = fixed(2, evalSetDifference)
	m["$setEquals"] = compileSetEquals
	m["$setIsSubset"] = fixed(2, evalSetIsSubset)
	m["$anyElementTrue"] = fixed(1, elementsTrue(true, mongoerr.Location17041))
	m["$allElementsTrue"] = fixed(1, elementsTrue(false, mongoerr.Location17040))
}

// uniqueSorted returns a's distinct values in MongoDB's value order, which
// is the order MongoDB's set operators return them in.
func uniqueSorted(a bson.A) bson.A {
	out := append(bson.A{}, a...)
	slices.SortStableFunc(out, compareValues)
	return slices.CompactFunc(out, func(x, y any) bool { return compareValues(x, y) == 0 })
}

func containsValue(sorted bson.A, v any) bool {
	_, found := slices.BinarySearchFunc(sorted, v, compareValues)
	return found
}

func setOperand(name string, v any, code mongoerr.Code) (bson.A, error) {
	a, ok := asArray(v)
	if !ok {
		return nil, mongoerr.Newf(code, "All operands of %s must be arrays. One argument is of type: %s",
			name, typeName(v))
	}
	return a, nil
}

func evalSetUnion(name string, vals []any) (any, error) {
	all := bson.A{}
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		a, err := setOperand(name, v, mongoerr.Location17043)
		if err != nil {
			return nil, err
		}
		all = append(all, a...)
	}
	return uniqueSorted(all), nil
}

func evalSetIntersection(name string, vals []any) (any, error) {
	var cur bson.A
	for i, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		a, err := setOperand(name, v, mongoerr.Location17047)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			cur = uniqueSorted(a)
			continue
		}
		next := uniqueSorted(a)
		cur = slices.DeleteFunc(cur, func(x any) bool { return !containsValue(next, x) })
	}
	if cur == nil {
		cur = bson.A{}
	}
	return cur, nil
}

func evalSetDifference(_ string, vals []any) (any, error) {
	if nullish(vals[0]) || nullish(vals[1]) {
		return nil, nil
	}
	l, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17048, "both operands of $setDifference must be arrays. First argument is of type: %s",
			typeName(vals[0]))
	}
	r, ok := asArray(vals[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17049, "both operands of $setDifference must be arrays. Second argument is of type: %s",
			typeName(vals[1]))
	}
	seen := uniqueSorted(r)
	out := bson.A{}
	for _, x := range l {
		if pos, found := slices.BinarySearchFunc(seen, x, compareValues); !found {
			out = append(out, x)
			seen = slices.Insert(seen, pos, x)
		}
	}
	return out, nil
}

func compileSetEquals(name string, arg any) (node, error) {
	nodes, err := parseArgs(arg)
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, mongoerr.Newf(mongoerr.Location17045, "$setEquals needs at least two arguments had: %d", len(nodes))
	}
	return strict(name, nodes, evalSetEquals), nil
}

func evalSetEquals(name string, vals []any) (any, error) {
	var first bson.A
	for i, v := range vals {
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location17044, "All operands of $setEquals must be arrays. One argument is of type: %s",
				typeName(v))
		}
		s := uniqueSorted(a)
		if i == 0 {
			first = s
		} else if compareValues(first, s) != 0 {
			return false, nil
		}
	}
	return true, nil
}

func evalSetIsSubset(_ string, vals []any) (any, error) {
	l, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17046, "both operands of $setIsSubset must be arrays. First argument is of type: %s",
			typeName(vals[0]))
	}
	r, ok := asArray(vals[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17042, "both operands of $setIsSubset must be arrays. Second argument is of type: %s",
			typeName(vals[1]))
	}
	set := uniqueSorted(r)
	for _, x := range l {
		if !containsValue(set, x) {
			return false, nil
		}
	}
	return true, nil
}

// elementsTrue builds $anyElementTrue (any) and $allElementsTrue (!any).
func elementsTrue(wantAny bool, code mongoerr.Code) evalFn {
	return func(name string, vals []any) (any, error) {
		a, ok := asArray(vals[0])
		if !ok {
			return nil, mongoerr.Newf(code, "%s's argument must be an array, but is %s", name, typeName(vals[0]))
		}
		for _, x := range a {
			if Truthy(x) == wantAny {
				return wantAny, nil
			}
		}
		return !wantAny, nil
	}
}
