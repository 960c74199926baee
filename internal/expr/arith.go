package expr

import (
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addArithOps(m map[string]compileFn) {
	m["$add"] = variadic(evalAdd)
	m["$subtract"] = fixed(2, evalSubtract)
	m["$multiply"] = variadic(evalMultiply)
	m["$divide"] = fixed(2, evalDivide)
	m["$mod"] = fixed(2, evalMod)
	m["$abs"] = fixed(1, numeric1(absNumber))
	m["$ceil"] = fixed(1, numeric1(ceilNumber))
	m["$floor"] = fixed(1, numeric1(floorNumber))
	m["$sqrt"] = fixed(1, numeric1(sqrtNumber))
	m["$exp"] = fixed(1, numeric1(expNumber))
	m["$ln"] = fixed(1, numeric1(lnNumber))
	m["$log10"] = fixed(1, numeric1(log10Number))
	m["$log"] = fixed(2, evalLog)
	m["$pow"] = fixed(2, evalPow)
	m["$round"] = ranged(1, 2, roundOrTrunc(roundHalfEven))
	m["$trunc"] = ranged(1, 2, roundOrTrunc(roundTowardZero))
}

func evalAdd(name string, vals []any) (any, error) {
	var s sum
	var date *bson.DateTime
	for _, v := range vals {
		switch x := v.(type) {
		case bson.DateTime:
			if date != nil {
				return nil, mongoerr.New(mongoerr.Location16612, "only one date allowed in an $add expression")
			}
			date = &x
			s.add(int64(x))
		default:
			if nullish(v) {
				return nil, nil
			}
			if !isNumber(v) {
				return nil, mongoerr.Newf(mongoerr.Location16554, "$add only supports numeric or date types, not %s", typeName(v))
			}
			s.add(v)
		}
	}
	if date != nil {
		return addToDate(&s)
	}
	return s.result(), nil
}

// addToDate turns the sum of a date and numbers back into a date; the
// numbers are milliseconds, rounded to the nearest one.
func addToDate(s *sum) (any, error) {
	if s.kind == kindDecimal {
		return bson.DateTime(int64(math.Round(s.decimal().float()))), nil
	}
	if s.kind <= kindLong && !s.overflow {
		return bson.DateTime(s.i), nil
	}
	f := math.Round(s.float())
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return nil, mongoerr.New(mongoerr.Overflow, "date overflow in $add")
	}
	return bson.DateTime(int64(f)), nil
}

func evalSubtract(_ string, vals []any) (any, error) {
	l, r := vals[0], vals[1]
	if isNumber(l) && isNumber(r) {
		return subtractNumbers(l, r), nil
	}
	if nullish(l) || nullish(r) {
		return nil, nil
	}
	if ld, ok := l.(bson.DateTime); ok {
		switch rv := r.(type) {
		case bson.DateTime:
			return int64(ld) - int64(rv), nil
		case int32, int64, float64, bson.Decimal128:
			return bson.DateTime(int64(ld) - int64(math.Round(toFloat(rv)))), nil
		}
		return nil, mongoerr.Newf(mongoerr.Location16613, "can't $subtract %s from Date", typeName(r))
	}
	return nil, mongoerr.Newf(mongoerr.Location16556, "can't $subtract %s from %s", typeName(r), typeName(l))
}

func subtractNumbers(l, r any) any {
	switch max(kindOf(l), kindOf(r)) {
	case kindDecimal:
		return decAdd(toDecimal(l), decNeg(toDecimal(r))).bson()
	case kindDouble:
		return toFloat(l) - toFloat(r)
	case kindLong:
		if d, ok := subInt64(toInt64(l), toInt64(r)); ok {
			return d
		}
	default:
		if d, ok := subInt64(toInt64(l), toInt64(r)); ok {
			return intOrLong(d)
		}
	}
	return toFloat(l) - toFloat(r)
}

func evalMultiply(_ string, vals []any) (any, error) {
	p := product{kind: kindInt, i: 1, f: 1}
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(mongoerr.Location16555, "$multiply only supports numeric types, not %s", typeName(v))
		}
		p.mul(v)
	}
	return p.result(), nil
}

// product multiplies like $multiply: exact integers until they overflow,
// doubles alongside, and decimals from the first decimal operand on.
type product struct {
	kind numKind
	i    int64
	f    float64
	dec  *decimal
}

func (p *product) mul(v any) {
	k := kindOf(v)
	if k == kindDecimal || p.kind == kindDecimal {
		seed := p.seed()
		d := decMul(seed, toDecimal(v))
		p.dec, p.kind = &d, kindDecimal
		return
	}
	p.f *= toFloat(v)
	i, ok := mulInt64(p.i, toInt64(v))
	p.i = i
	if !ok || k == kindDouble {
		p.kind = kindDouble
	} else {
		p.kind = max(p.kind, k)
	}
}

// seed is the running product as a decimal.
func (p *product) seed() decimal {
	switch {
	case p.dec != nil:
		return *p.dec
	case p.kind == kindDouble:
		return decFromFloat(p.f, 15)
	}
	return toDecimal(p.i)
}

func (p *product) result() any {
	switch p.kind {
	case kindDecimal:
		return p.dec.bson()
	case kindDouble:
		return p.f
	case kindLong:
		return p.i
	}
	return intOrLong(p.i)
}

func evalDivide(_ string, vals []any) (any, error) {
	l, r := vals[0], vals[1]
	if !isNumber(l) || !isNumber(r) {
		if nullish(l) || nullish(r) {
			return nil, nil
		}
		return nil, mongoerr.Newf(mongoerr.Location16609, "$divide only supports numeric types, not %s and %s", typeName(l), typeName(r))
	}
	if kindOf(l) == kindDecimal || kindOf(r) == kindDecimal {
		dr := toDecimal(r)
		if dr.isZero() {
			return nil, mongoerr.New(mongoerr.Location16608, "can't $divide by zero")
		}
		return decDiv(toDecimal(l), dr).bson(), nil
	}
	if toFloat(r) == 0 {
		return nil, mongoerr.New(mongoerr.Location16608, "can't $divide by zero")
	}
	return toFloat(l) / toFloat(r), nil
}

func evalMod(_ string, vals []any) (any, error) {
	l, r := vals[0], vals[1]
	if !isNumber(l) || !isNumber(r) {
		if nullish(l) || nullish(r) {
			return nil, nil
		}
		return nil, mongoerr.Newf(mongoerr.Location16611, "$mod only supports numeric types, not %s and %s", typeName(l), typeName(r))
	}
	if toFloat(r) == 0 {
		return nil, mongoerr.New(mongoerr.Location16610, "can't $mod by zero")
	}
	lk, rk := kindOf(l), kindOf(r)
	switch {
	case lk == kindDecimal || rk == kindDecimal:
		return decFromFloatResult(math.Mod(toFloat(l), toFloat(r))), nil
	case lk == kindDouble || (rk == kindDouble && !isIntegral(r)):
		return math.Mod(toFloat(l), toFloat(r)), nil
	case lk == kindLong || rk == kindLong:
		return safeMod(toInt64(l), toInt64(r)), nil
	}
	return int32(safeMod(toInt64(l), toInt64(r))), nil
}

// safeMod avoids the one overflowing case, MinInt64 % -1.
func safeMod(a, b int64) int64 {
	if b == -1 {
		return 0
	}
	return a % b
}

// numeric1 wraps a one-number operator with MongoDB's shared checks: null
// in gives null out, and a non-number is error 28765.
func numeric1(f func(name string, v any) (any, error)) evalFn {
	return func(name string, vals []any) (any, error) {
		v := vals[0]
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(mongoerr.Location28765, "%s only supports numeric types, not %s", name, typeName(v))
		}
		return f(name, v)
	}
}

func absNumber(_ string, v any) (any, error) {
	switch n := v.(type) {
	case float64:
		return math.Abs(n), nil
	case bson.Decimal128:
		d := decFromBSON(n)
		if d.special() {
			d.inf = absSign(d.inf)
		} else {
			d.coef.Abs(d.coef)
		}
		return d.bson(), nil
	}
	i := toInt64(v)
	if i == math.MinInt64 {
		return nil, mongoerr.New(mongoerr.Location28680, "can't take $abs of long long min")
	}
	if _, long := v.(int64); long {
		return absInt64(i), nil
	}
	return intOrLong(absInt64(i)), nil
}

func absSign(s int) int {
	if s < 0 {
		return -s
	}
	return s
}

func ceilNumber(_ string, v any) (any, error) {
	switch n := v.(type) {
	case float64:
		return math.Ceil(n), nil
	case bson.Decimal128:
		return decFromBSON(n).quantize(0, roundCeiling).bson(), nil
	}
	return v, nil
}

func floorNumber(_ string, v any) (any, error) {
	switch n := v.(type) {
	case float64:
		return math.Floor(n), nil
	case bson.Decimal128:
		return decFromBSON(n).quantize(0, roundFloor).bson(), nil
	}
	return v, nil
}

func sqrtNumber(_ string, v any) (any, error) {
	f := toFloat(v)
	if f < 0 {
		return nil, mongoerr.New(mongoerr.Location28714, "$sqrt's argument must be greater than or equal to 0")
	}
	return floatOrDecimal(v, math.Sqrt(f)), nil
}

func expNumber(_ string, v any) (any, error) { return floatOrDecimal(v, math.Exp(toFloat(v))), nil }

func lnNumber(_ string, v any) (any, error) {
	f := toFloat(v)
	if !(f > 0 || math.IsNaN(f)) {
		return nil, mongoerr.Newf(mongoerr.Location28766, "$ln's argument must be a positive number, but is %s", formatNumber(f))
	}
	return floatOrDecimal(v, math.Log(f)), nil
}

func log10Number(_ string, v any) (any, error) {
	f := toFloat(v)
	if !(f > 0 || math.IsNaN(f)) {
		return nil, mongoerr.Newf(mongoerr.Location28761, "$log10's argument must be a positive number, but is %s", formatNumber(f))
	}
	return floatOrDecimal(v, math.Log10(f)), nil
}

// floatOrDecimal returns a transcendental result as a double, or as a
// decimal when the operand was one (computed in binary: a known gap).
func floatOrDecimal(operand any, f float64) any {
	if kindOf(operand) == kindDecimal {
		return decFromFloatResult(f)
	}
	return f
}

func evalLog(_ string, vals []any) (any, error) {
	x, base := vals[0], vals[1]
	if nullish(x) || nullish(base) {
		return nil, nil
	}
	if !isNumber(x) {
		return nil, mongoerr.Newf(mongoerr.Location28756, "$log's argument must be numeric, not %s", typeName(x))
	}
	if !isNumber(base) {
		return nil, mongoerr.Newf(mongoerr.Location28757, "$log's base must be numeric, not %s", typeName(base))
	}
	xf, bf := toFloat(x), toFloat(base)
	if !(xf > 0 || math.IsNaN(xf)) {
		return nil, mongoerr.Newf(mongoerr.Location28758, "$log's argument must be a positive number, but is %s", formatNumber(xf))
	}
	if !((bf > 0 && bf != 1) || math.IsNaN(bf)) {
		return nil, mongoerr.Newf(mongoerr.Location28759,
			"$log's base must be a positive number not equal to 1, but is %s", formatNumber(bf))
	}
	r := math.Log(xf) / math.Log(bf)
	if kindOf(x) == kindDecimal || kindOf(base) == kindDecimal {
		return decFromFloatResult(r), nil
	}
	return r, nil
}

// formatNumber prints a double as C++ streams do in MongoDB's messages.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return bsonutil.FormatDouble(f)[:len(bsonutil.FormatDouble(f))-2]
	}
	return bsonutil.FormatDouble(f)
}
