package ddl

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// numberTypes is the type list of IDL's numeric fields.
const numberTypes = "[long, int, decimal, double]"

// safeInt64 converts a number as mongod's safeInt64 IDL type does:
// fractions truncated, NaN as 0, out-of-range values saturated.
func safeInt64(cmd, field string, v any) (int64, error) {
	if !bsonutil.IsNumber(v) {
		return 0, mongoerr.WrongType(cmd, field, v, numberTypes)
	}
	switch n := v.(type) {
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	}
	f := bsonutil.ToFloat(v)
	switch {
	case math.IsNaN(f):
		return 0, nil
	case f >= math.MaxInt64:
		return math.MaxInt64, nil
	case f <= math.MinInt64:
		return math.MinInt64, nil
	}
	return int64(f), nil
}

// safeBool reads a bool as mongod's safeBool IDL type does: a bool or a
// number (non-zero is true).
func safeBool(cmd, field string, v any) (bool, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	if bsonutil.IsNumber(v) {
		return bsonutil.ToFloat(v) != 0, nil
	}
	return false, mongoerr.WrongType(cmd, field, v, "[bool, long, int, decimal, double]")
}

// docOption reads an optional object field (nil when absent or null).
func docOption(opts bson.D, cmd, field string) (bson.D, error) {
	v, ok := bsonutil.Field(opts, field)
	if !ok || v == nil {
		return nil, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.WrongType(cmd, field, v, "object")
	}
	return d, nil
}
