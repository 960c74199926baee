package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addArrayOps(m map[string]compileFn) {
	m["$size"] = fixed(1, evalSize)
	m["$arrayElemAt"] = fixed(2, evalArrayElemAt)
	m["$first"] = fixed(1, firstOrLast(0))
	m["$last"] = fixed(1, firstOrLast(-1))
	m["$in"] = fixedLoop(2, evalIn)
	m["$slice"] = ranged(2, 3, evalSlice)
	m["$concatArrays"] = variadicLoop(evalConcatArrays)
	m["$isArray"] = fixed(1, func(_ string, v []any) (any, error) { _, ok := asArray(v[0]); return ok, nil })
	m["$reverseArray"] = fixedLoop(1, evalReverseArray)
	m["$range"] = rangedLoop(2, 3, evalRange)
	m["$indexOfArray"] = rangedLoop(2, 4, evalIndexOfArray)
	m["$filter"] = compileFilter
	m["$map"] = compileMap
	m["$reduce"] = compileReduce
}

func evalSize(_ string, vals []any) (any, error) {
	a, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location17124, "The argument to $size must be an array. Type of argument was: %s",
			typeName(vals[0]))
	}
	return intOrLong(int64(len(a))), nil
}

func evalArrayElemAt(name string, vals []any) (any, error) {
	arr, idx := vals[0], vals[1]
	if nullish(arr) || nullish(idx) {
		return nil, nil
	}
	a, ok := asArray(arr)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location28689, "%s's first argument must be an array, but is %s", name, typeName(arr))
	}
	if !isNumber(idx) {
		return nil, mongoerr.Newf(mongoerr.Location28690, "%s's second argument must be a numeric value, but is %s", name, typeName(idx))
	}
	if !isIntegral32(idx) {
		return nil, mongoerr.Newf(mongoerr.Location28691, "%s's second argument must be representable as a 32-bit integer: %s",
			name, formatNumber(toFloat(idx)))
	}
	return elemAt(a, toInt64(idx)), nil
}

// elemAt indexes from the front, or from the back for negative i; out of
// range is missing.
func elemAt(a bson.A, i int64) any {
	if i < 0 {
		i += int64(len(a))
	}
	if i < 0 || i >= int64(len(a)) {
		return Missing
	}
	return a[i]
}

func firstOrLast(i int64) evalFn {
	return func(name string, vals []any) (any, error) {
		if nullish(vals[0]) {
			return nil, nil
		}
		a, ok := asArray(vals[0])
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location28689, "%s's argument must be an array, but is %s", name, typeName(vals[0]))
		}
		return elemAt(a, i), nil
	}
}

func evalIn(m meter, _ string, vals []any) (any, error) {
	a, ok := asArray(vals[1])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40081, "$in requires an array as a second argument, found: %s", typeName(vals[1]))
	}
	for _, x := range a {
		if err := m.step(); err != nil {
			return nil, err
		}
		if compareValues(vals[0], x) == 0 {
			return true, nil
		}
	}
	return false, nil
}

func evalSlice(_ string, vals []any) (any, error) {
	if nullish(vals[0]) || nullish(vals[1]) {
		return nil, nil
	}
	a, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location28724, "First argument to $slice must be an array, but is of type: %s", typeName(vals[0]))
	}
	if !isNumber(vals[1]) {
		return nil, mongoerr.Newf(mongoerr.Location28725, "Second argument to $slice must be a numeric value, but is of type: %s",
			typeName(vals[1]))
	}
	if !isIntegral32(vals[1]) {
		return nil, mongoerr.Newf(mongoerr.Location28726, "Second argument to $slice can't be represented as a 32-bit integer: %s",
			formatNumber(toFloat(vals[1])))
	}
	n := int(toInt64(vals[1]))
	if len(vals) == 2 {
		return sliceCount(a, n), nil
	}
	return sliceFrom(a, n, vals[2])
}

func sliceCount(a bson.A, n int) bson.A {
	if n >= 0 {
		return append(bson.A{}, a[:min(n, len(a))]...)
	}
	return append(bson.A{}, a[max(len(a)+n, 0):]...)
}

func sliceFrom(a bson.A, start int, countVal any) (any, error) {
	if start < 0 {
		start = max(len(a)+start, 0)
	}
	start = min(start, len(a))
	if nullish(countVal) {
		return nil, nil
	}
	if !isNumber(countVal) {
		return nil, mongoerr.Newf(mongoerr.Location28727, "Third argument to $slice must be numeric, but is of type: %s", typeName(countVal))
	}
	if !isIntegral32(countVal) {
		return nil, mongoerr.Newf(mongoerr.Location28728, "Third argument to $slice can't be represented as a 32-bit integer: %s",
			formatNumber(toFloat(countVal)))
	}
	count := int(toInt64(countVal))
	if count <= 0 {
		return nil, mongoerr.Newf(mongoerr.Location28729, "Third argument to $slice must be positive: %d", count)
	}
	return append(bson.A{}, a[start:min(start+count, len(a))]...), nil
}

func evalConcatArrays(m meter, _ string, vals []any) (any, error) {
	out := bson.A{}
	for _, v := range vals {
		if err := m.step(); err != nil {
			return nil, err
		}
		if nullish(v) {
			return nil, nil
		}
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location28664, "$concatArrays only supports arrays, not %s", typeName(v))
		}
		out = append(out, a...)
	}
	return out, checkArraySize(out)
}

func evalReverseArray(m meter, _ string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	a, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34435, "The argument to $reverseArray must be an array, but was of type: %s",
			typeName(vals[0]))
	}
	out := make(bson.A, len(a))
	for i, x := range a {
		if err := m.step(); err != nil {
			return nil, err
		}
		out[len(a)-1-i] = x
	}
	return out, nil
}

func evalRange(m meter, _ string, vals []any) (any, error) {
	start, err := rangeArg(vals[0], "starting value", [2]mongoerr.Code{mongoerr.Location34443, mongoerr.Location34444})
	if err != nil {
		return nil, err
	}
	end, err := rangeArg(vals[1], "ending value", [2]mongoerr.Code{mongoerr.Location34445, mongoerr.Location34446})
	if err != nil {
		return nil, err
	}
	step := int64(1)
	if len(vals) == 3 {
		if step, err = rangeArg(vals[2], "step value", [2]mongoerr.Code{mongoerr.Location34447, mongoerr.Location34448}); err != nil {
			return nil, err
		}
		if step == 0 {
			return nil, mongoerr.New(mongoerr.Location34449, "$range requires a non-zero step value")
		}
	}
	if n := (end - start) / step; n > rangeMaxElems {
		return nil, mongoerr.Newf(mongoerr.Location5489600,
			"$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes",
			n*rangeElemBytes, rangeMaxElems*rangeElemBytes)
	}
	out := bson.A{}
	for i := start; (step > 0 && i < end) || (step < 0 && i > end); i += step {
		if err := m.step(); err != nil {
			return nil, err
		}
		out = append(out, int32(i))
	}
	return out, nil
}

// $range's output is bounded like MongoDB's: 100 MiB at 16 bytes a value.
const (
	rangeElemBytes = 16
	rangeMaxElems  = 100 << 20 / rangeElemBytes
)

func rangeArg(v any, what string, codes [2]mongoerr.Code) (int64, error) {
	if !isNumber(v) {
		sep := " "
		if what == "step value" {
			sep = ""
		}
		return 0, mongoerr.Newf(codes[0], "$range requires a numeric %s, found value of type:%s%s", what, sep, typeName(v))
	}
	if !isIntegral32(v) {
		article := "a"
		if what == "ending value" {
			article = "an"
		}
		return 0, mongoerr.Newf(codes[1], "$range requires %s %s that can be represented as a 32-bit integer, found value: %s",
			article, what, formatValue(v))
	}
	return toInt64(v), nil
}

func evalIndexOfArray(m meter, name string, vals []any) (any, error) {
	if nullish(vals[0]) {
		return nil, nil
	}
	a, ok := asArray(vals[0])
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40090, "$indexOfArray requires an array as a first argument, found: %s",
			typeName(vals[0]))
	}
	start, end, err := indexBounds(name, vals, len(a))
	if err != nil {
		return nil, err
	}
	for i := start; i < end; i++ {
		if err := m.step(); err != nil {
			return nil, err
		}
		if compareValues(a[i], vals[1]) == 0 {
			return int32(i), nil
		}
	}
	return int32(-1), nil
}
