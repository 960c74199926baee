package update

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Arithmetic follows MongoDB's SafeNum: int32 results that overflow widen
// to int64; int64 results that overflow are an error (ok false), never a
// silent double; any double makes a double; any decimal makes a decimal.

type arith int

const (
	opAdd arith = iota
	opMul
)

func normalizeInt(v any) any {
	if i, ok := v.(int); ok {
		return int64(i)
	}
	return v
}

func calc(op arith, a, b any) (any, bool) {
	a, b = normalizeInt(a), normalizeInt(b)
	if isDecimal(a) || isDecimal(b) {
		return decimalCalc(op, toDecimal(a), toDecimal(b))
	}
	if isDouble(a) || isDouble(b) {
		return floatCalc(op, toFloat(a), toFloat(b)), true
	}
	x, y := toInt64(a), toInt64(b)
	if _, ok := a.(int32); ok {
		if _, ok := b.(int32); ok {
			return int32Calc(op, x, y), true
		}
	}
	return int64Calc(op, x, y)
}

func isDecimal(v any) bool { _, ok := v.(bson.Decimal128); return ok }
func isDouble(v any) bool  { _, ok := v.(float64); return ok }

func toFloat(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return float64(toInt64(v))
}

func floatCalc(op arith, x, y float64) float64 {
	if op == opAdd {
		return x + y
	}
	return x * y
}

// int32Calc cannot overflow int64, so it narrows back when the result fits.
func int32Calc(op arith, x, y int64) any {
	r := x + y
	if op == opMul {
		r = x * y
	}
	if r >= math.MinInt32 && r <= math.MaxInt32 {
		return int32(r)
	}
	return r
}

func int64Calc(op arith, x, y int64) (any, bool) {
	if op == opAdd {
		r := x + y
		return r, (r > x) == (y > 0)
	}
	if x == 0 || y == 0 {
		return int64(0), true
	}
	r := x * y
	ok := r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
	return r, ok
}

// toDecimal converts a number to decimal as MongoDB does: integers exactly,
// doubles rounded to 15 significant digits.
func toDecimal(v any) bson.Decimal128 {
	switch x := v.(type) {
	case bson.Decimal128:
		return x
	case float64:
		return floatToDecimal(x)
	}
	d, _ := bson.ParseDecimal128FromBigInt(big.NewInt(toInt64(v)), 0)
	return d
}

func floatToDecimal(f float64) bson.Decimal128 {
	var s string
	switch {
	case math.IsNaN(f):
		s = "NaN"
	case math.IsInf(f, 1):
		s = "Infinity"
	case math.IsInf(f, -1):
		s = "-Infinity"
	default:
		s = strconv.FormatFloat(f, 'e', 14, 64)
	}
	d, _ := bson.ParseDecimal128(s)
	return d
}

func nan() float64      { return math.NaN() }
func inf(s int) float64 { return math.Inf(s) }
