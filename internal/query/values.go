package query

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// absent stands for a path that yields no value, MongoDB's EOO element.
type absent struct{}

func isAbsent(v any) bool {
	_, ok := v.(absent)
	return ok
}

// asDoc returns v as a document; bson.M and bson.Raw are converted.
func asDoc(v any) (bson.D, bool) {
	switch d := v.(type) {
	case bson.D:
		return d, true
	case bson.M, bson.Raw:
		return bsonutil.ToD(d), true
	}
	return nil, false
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

// arrayAsDoc views an array as the document {"0": a[0], "1": a[1], ...},
// which is how MongoDB's $elemMatch matches nested arrays.
func arrayAsDoc(a bson.A) bson.D {
	d := make(bson.D, len(a))
	for i, v := range a {
		d[i] = bson.E{Key: strconv.Itoa(i), Value: v}
	}
	return d
}

// isArrayIndex reports whether a path component names an array element,
// spelled as array field names are: decimal digits, no leading zero.
func isArrayIndex(part string) (int, bool) {
	if part == "" || (part[0] == '0' && len(part) > 1) || len(part) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(part); i++ {
		if part[i] < '0' || part[i] > '9' {
			return 0, false
		}
		n = n*10 + int(part[i]-'0')
	}
	return n, true
}

// formatElem renders key and value as MongoDB's BSONElement::toString
// does in error messages, e.g. `$size: "x"`.
// formatNumber renders a number as C++ streams a double (precision 6),
// which MongoDB uses for "Invalid numerical type code" messages.
func formatNumber(v any) string {
	return bsonutil.StreamDouble(bsonutil.ToFloat(v))
}

// twoPow63 is 2^63 as a float64, the first double too large for an int64.
const twoPow63 = 9223372036854775808.0

// parseInteger converts a numeric element to int64 as MongoDB's
// parseIntegerElementToLong does; errors are FailedToParse with its
// messages, which callers may wrap.
func parseInteger(key string, v any) (int64, *mongoerr.Error) {
	switch n := v.(type) {
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	case float64:
		return doubleToInteger(key, n)
	case bson.Decimal128:
		return decimalToInteger(key, n)
	}
	return 0, mongoerr.Newf(mongoerr.FailedToParse, "Expected a number in: %s", bsonutil.FormatElem(key, v))
}

func doubleToInteger(key string, f float64) (int64, *mongoerr.Error) {
	elem := bsonutil.FormatElem(key, f)
	switch {
	case math.IsNaN(f):
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", elem)
	case f >= twoPow63 || f < -twoPow63:
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", elem)
	case f != math.Trunc(f):
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "Expected an integer: %s", elem)
	}
	return int64(f), nil
}

func decimalToInteger(key string, d bson.Decimal128) (int64, *mongoerr.Error) {
	i, exact, ok := decimalInt64(d)
	if !ok || !exact {
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", bsonutil.FormatElem(key, d))
	}
	return i, nil
}

// decimalInt64 truncates a decimal toward zero. ok is false for NaN,
// infinities and values outside int64; exact is false when digits were lost.
func decimalInt64(d bson.Decimal128) (i int64, exact, ok bool) {
	if d.IsNaN() || d.IsInf() != 0 {
		return 0, false, false
	}
	f, _, err := big.ParseFloat(d.String(), 10, 256, big.ToZero)
	if err != nil {
		return 0, false, false
	}
	n, acc := f.Int(nil)
	if !n.IsInt64() {
		return 0, false, false
	}
	return n.Int64(), acc == big.Exact, true
}

// coerceToInt64 converts a number to int64, truncating fractions, as
// MongoDB's BSONElement::tryCoerce; errors are BadValue.
func coerceToInt64(v any) (int64, *mongoerr.Error) {
	switch n := v.(type) {
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, mongoerr.New(mongoerr.BadValue, "Unable to coerce NaN/Inf to integral type")
		}
		if n >= twoPow63 || n < -twoPow63 {
			return 0, mongoerr.New(mongoerr.BadValue, "Out of bounds coercing to integral value")
		}
		return int64(n), nil
	case bson.Decimal128:
		if n.IsNaN() || n.IsInf() != 0 {
			return 0, mongoerr.New(mongoerr.BadValue, "Unable to coerce NaN/Inf to integral type")
		}
		i, _, ok := decimalInt64(n)
		if !ok {
			return 0, mongoerr.New(mongoerr.BadValue, "Out of bounds coercing to integral value")
		}
		return i, nil
	}
	i, err := parseInteger("", v)
	return i, err
}

// numberToInt64 truncates any number to int64 for matching; ok is false
// for non-numbers, NaN, infinities and values outside int64, which MongoDB's
// $mod and bit tests never match.
func numberToInt64(v any) (i int64, exact, ok bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true, true
	case int64:
		return n, true, true
	case int:
		return int64(n), true, true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) || n >= twoPow63 || n < -twoPow63 {
			return 0, false, false
		}
		return int64(n), n == math.Trunc(n), true
	case bson.Decimal128:
		return decimalInt64(n)
	}
	return 0, false, false
}

// trueValue is MongoDB's BSONElement::trueValue: false for false, null,
// undefined, absent and numeric zero; true otherwise (NaN is true).
func trueValue(v any) bool {
	if _, ok := v.(absent); ok {
		return false
	}
	return bsonutil.TrueValue(v)
}
