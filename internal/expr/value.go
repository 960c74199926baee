package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// nullish reports whether v is null, undefined or missing: the values most
// operators turn into a null result.
func nullish(v any) bool {
	switch v.(type) {
	case nil, bson.Null, bson.Undefined, missing:
		return true
	}
	return false
}

// asArray returns v as an array.
func asArray(v any) (bson.A, bool) {
	switch a := v.(type) {
	case bson.A:
		return a, true
	case []any:
		return bson.A(a), true
	}
	return nil, false
}

func toD(v any) bson.D { return bsonutil.ToD(v) }

// typeName is bsonutil.TypeName plus "missing", as $type spells it.
func typeName(v any) string {
	if IsMissing(v) {
		return "missing"
	}
	return bsonutil.TypeName(v)
}

// compareValues orders values as MongoDB's aggregation does; missing sorts
// with undefined, below null.
func compareValues(a, b any) int {
	return bsonutil.Compare(forCompare(a), forCompare(b))
}

func forCompare(v any) any {
	if IsMissing(v) {
		return bson.Undefined{}
	}
	return v
}

// isNumber reports whether v is a BSON number.
func isNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128, int:
		return true
	}
	return false
}

// isIntegral reports whether the number v holds an integral value that
// fits in an int64 (MongoDB's "integral" for index-like arguments).
func isIntegral(v any) bool {
	switch n := v.(type) {
	case int32, int64, int:
		return true
	case float64:
		return n == math.Trunc(n) && n >= -9.223372036854775808e18 && n < 9.223372036854775808e18
	case bson.Decimal128:
		f := bsonutil.ToFloat(n)
		return f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return false
}

// isIntegral32 is isIntegral restricted to the int32 range.
func isIntegral32(v any) bool {
	if !isIntegral(v) {
		return false
	}
	i := toInt64(v)
	return i >= math.MinInt32 && i <= math.MaxInt32
}

// toInt64 truncates a number to int64.
func toInt64(v any) int64 {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	case bson.Decimal128:
		return int64(bsonutil.ToFloat(n))
	}
	return 0
}

// toFloat converts a number to float64.
func toFloat(v any) float64 { return bsonutil.ToFloat(v) }

// intOrLong returns i as int32 when it fits, else int64 (MongoDB's
// createIntOrLong).
func intOrLong(i int64) any {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return int32(i)
	}
	return i
}

// numKind orders numeric types by width: the result type of arithmetic is
// the widest kind among its operands.
type numKind int

const (
	kindInt numKind = iota
	kindLong
	kindDouble
	kindDecimal
)

func kindOf(v any) numKind {
	switch v.(type) {
	case int64:
		return kindLong
	case float64:
		return kindDouble
	case bson.Decimal128:
		return kindDecimal
	}
	return kindInt
}
