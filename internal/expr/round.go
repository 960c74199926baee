package expr

import (
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// roundOrTrunc implements $round and $trunc. As in MongoDB, a double is
// first widened to a 34-digit decimal and rounded there, so the result
// follows the double's exact binary value ($round: [2.675, 2] is 2.67).
func roundOrTrunc(mode roundMode) evalFn {
	return func(name string, vals []any) (any, error) {
		v := vals[0]
		if nullish(v) {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, mongoerr.Newf(mongoerr.Location51081, "%s only supports numeric types, not %s", name, typeName(v))
		}
		prec, isNull, err := roundPrecision(name, vals)
		if err != nil || isNull {
			return nil, err
		}
		return roundNumber(name, v, prec, mode)
	}
}

func roundPrecision(name string, vals []any) (int64, bool, error) {
	if len(vals) < 2 {
		return 0, false, nil
	}
	p := vals[1]
	if nullish(p) {
		return 0, true, nil
	}
	if !isNumber(p) || !isIntegral(p) {
		return 0, false, mongoerr.Newf(mongoerr.Location51082, "precision argument to  %s must be a integral value", name)
	}
	prec := toInt64(p)
	if prec < -20 || prec > 100 {
		return 0, false, mongoerr.Newf(mongoerr.Location51083,
			"cannot apply %s with precision value %d value must be in [-20, 100]", name, prec)
	}
	return prec, false, nil
}

func roundNumber(name string, v any, prec int64, mode roundMode) (any, error) {
	switch n := v.(type) {
	case bson.Decimal128:
		d := decFromBSON(n)
		if d.special() {
			return v, nil
		}
		return d.quantize(int(-prec), mode).bson(), nil
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return v, nil
		}
		return decFromFloat(n, decDigits).quantize(int(-prec), mode).float(), nil
	}
	if prec >= 0 {
		return v, nil
	}
	return roundInteger(name, v, prec, mode)
}

// roundInteger rounds an int or long to a negative precision (tens,
// hundreds...); an int that no longer fits becomes a long.
func roundInteger(name string, v any, prec int64, mode roundMode) (any, error) {
	d := toDecimal(v).quantize(int(-prec), mode)
	r := new(big.Int).Mul(d.coef, pow10(d.exp))
	if !r.IsInt64() {
		return nil, mongoerr.Newf(mongoerr.Location51080,
			"invalid conversion from Decimal128 result in %s resulting from arguments: [%d, %d]",
			name, toInt64(v), prec)
	}
	if _, long := v.(int64); long {
		return r.Int64(), nil
	}
	return intOrLong(r.Int64()), nil
}

func evalPow(_ string, vals []any) (any, error) {
	base, exp := vals[0], vals[1]
	if nullish(base) || nullish(exp) {
		return nil, nil
	}
	if !isNumber(base) {
		return nil, mongoerr.Newf(mongoerr.Location28762, "$pow's base must be numeric, not %s", typeName(base))
	}
	if !isNumber(exp) {
		return nil, mongoerr.Newf(mongoerr.Location28763, "$pow's exponent must be numeric, not %s", typeName(exp))
	}
	bf, ef := toFloat(base), toFloat(exp)
	if bf == 0 && ef < 0 {
		return nil, mongoerr.New(mongoerr.Location28764, "$pow cannot take a base of 0 and a negative exponent")
	}
	switch max(kindOf(base), kindOf(exp)) {
	case kindDecimal:
		return decFromFloatResult(math.Pow(bf, ef)), nil
	case kindDouble:
		return math.Pow(bf, ef), nil
	}
	return powIntegers(base, exp), nil
}

// powIntegers raises integers exactly while the result fits a long; past
// that MongoDB (and Mayfly) fall back to a double.
func powIntegers(base, exp any) any {
	b, e := toInt64(base), toInt64(exp)
	long := kindOf(base) == kindLong || kindOf(exp) == kindLong
	format := func(r int64) any {
		if long {
			return r
		}
		return intOrLong(r)
	}
	switch {
	case b == 0 && e == 0, b == 1:
		return format(1)
	case b == 0:
		return format(0)
	case b == -1:
		if e%2 == 0 {
			return format(1)
		}
		return format(-1)
	case e < 0 || e > 63:
		return math.Pow(float64(b), float64(e))
	}
	r := int64(1)
	for i := int64(0); i < e; i++ {
		var ok bool
		if r, ok = mulInt64(r, b); !ok {
			return math.Pow(float64(b), float64(e))
		}
	}
	return format(r)
}
