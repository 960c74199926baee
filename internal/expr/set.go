package expr

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addSetOps(m map[string]compileFn) {
	m["$setUnion"] = variadicLoop(evalSetUnion)
	m["$setIntersection"] = variadicLoop(evalSetIntersection)
	m["$setDifference"] = fixedLoop(2, evalSetDifference)
	m["$setEquals"] = compileSetEquals
	m["$setIsSubset"] = fixedLoop(2, evalSetIsSubset)
	m["$anyElementTrue"] = fixedLoop(1, elementsTrue(true, mongoerr.Location17041))
	m["$allElementsTrue"] = fixedLoop(1, elementsTrue(false, mongoerr.Location17040))
}

// uniqueSorted returns a's distinct values in MongoDB's value order, which
// is the order MongoDB's set operators return them in.
func uniqueSorted(m meter, a bson.A) (bson.A, error) {
	out := append(bson.A{}, a...)
	cmp, stopped := m.order(compareValues)
	slices.SortStableFunc(out, cmp)
	if err := stopped(); err != nil {
		return nil, err
	}
	return slices.CompactFunc(out, func(x, y any) bool { return compareValues(x, y) == 0 }), nil
}

// containsValue looks v up in sorted, counting the lookup as one step of
// the caller's loop.
func containsValue(m meter, sorted bson.A, v any) (bool, error) {
	if err := m.step(); err != nil {
		return false, err
	}
	_, found := slices.BinarySearchFunc(sorted, v, compareValues)
	return found, nil
}

func setOperand(name string, v any, code mongoerr.Code) (bson.A, error) {
	a, ok := asArray(v)
	if !ok {
		return nil, mongoerr.Newf(code, "All operands of %s must be arrays. One argument is of type: %s",
			name, typeName(v))
	}
	return a, nil
}

func evalSetUnion(m meter, name string, vals []any) (any, error) {
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
	return uniqueSorted(m, all)
}

func evalSetIntersection(m meter, name string, vals []any) (any, error) {
	var cur bson.A
	for i, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		a, err := setOperand(name, v, mongoerr.Location17047)
		if err != nil {
			return nil, err
		}
		next, err := uniqueSorted(m, a)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			cur = next
			continue
		}
		if cur, err = keepContained(m, cur, next); err != nil {
			return nil, err
		}
	}
	if cur == nil {
		cur = bson.A{}
	}
	return cur, nil
}

// keepContained keeps the values of cur that sorted holds.
func keepContained(m meter, cur, sorted bson.A) (bson.A, error) {
	var err error
	cur = slices.DeleteFunc(cur, func(x any) bool {
		found := false
		if err == nil {
			found, err = containsValue(m, sorted, x)
		}
		return !found
	})
	return cur, err
}

func evalSetDifference(m meter, _ string, vals []any) (any, error) {
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
	seen, err := uniqueSorted(m, r)
	if err != nil {
		return nil, err
	}
	out := bson.A{}
	for _, x := range l {
		if err := m.step(); err != nil {
			return nil, err
		}
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
	return strictLoop(name, nodes, evalSetEquals), nil
}

func evalSetEquals(m meter, name string, vals []any) (any, error) {
	var first bson.A
	for i, v := range vals {
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location17044, "All operands of $setEquals must be arrays. One argument is of type: %s",
				typeName(v))
		}
		s, err := uniqueSorted(m, a)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = s
		} else if compareValues(first, s) != 0 {
			return false, nil
		}
	}
	return true, nil
}

func evalSetIsSubset(m meter, _ string, vals []any) (any, error) {
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
	set, err := uniqueSorted(m, r)
	if err != nil {
		return nil, err
	}
	for _, x := range l {
		if found, err := containsValue(m, set, x); err != nil || !found {
			return false, err
		}
	}
	return true, nil
}

// elementsTrue builds $anyElementTrue (any) and $allElementsTrue (!any).
func elementsTrue(wantAny bool, code mongoerr.Code) loopFn {
	return func(m meter, name string, vals []any) (any, error) {
		a, ok := asArray(vals[0])
		if !ok {
			return nil, mongoerr.Newf(code, "%s's argument must be an array, but is %s", name, typeName(vals[0]))
		}
		for _, x := range a {
			if err := m.step(); err != nil {
				return nil, err
			}
			if Truthy(x) == wantAny {
				return wantAny, nil
			}
		}
		return !wantAny, nil
	}
}
