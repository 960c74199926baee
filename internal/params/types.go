package params

import (
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Bool builds a parameter over a getter and setter of a bool; a number
// sets it as C would (0 is false).
func Bool(get func() bool, set func(bool)) Param {
	return Param{Get: func() any { return get() }, Set: func(v any) error {
		b, ok := v.(bool)
		if !ok {
			if !bsonutil.IsNumber(v) {
				return mongoerr.Newf(mongoerr.BadValue, "Invalid value for bool parameter: %s", bsonutil.Format(v))
			}
			b = bsonutil.ToFloat(v) != 0
		}
		set(b)
		return nil
	}}
}

// Int builds an int32 parameter with a lower bound.
func Int(get func() int64, set func(int64), min int64) Param {
	return Param{Get: func() any { return int32(get()) }, Set: func(v any) error {
		if !bsonutil.IsNumber(v) {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for int parameter: %s", bsonutil.Format(v))
		}
		n := int64(bsonutil.ToFloat(v))
		if n < min {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for parameter: %d is less than the minimum %d", n, min)
		}
		set(n)
		return nil
	}}
}

// Float builds a double parameter within [min, max].
func Float(get func() float64, set func(float64), min, max float64) Param {
	return Param{Get: func() any { return get() }, Set: func(v any) error {
		if !bsonutil.IsNumber(v) {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for double parameter: %s", bsonutil.Format(v))
		}
		f := bsonutil.ToFloat(v)
		if !(f >= min && f <= max) { // NaN fails both
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for parameter: %s is not between %s and %s",
				bsonutil.Format(v), bsonutil.Format(min), bsonutil.Format(max))
		}
		set(f)
		return nil
	}}
}

// Fixed is a parameter set at start and read-only after it, as
// logicalSessionTimeoutMinutes.
func Fixed(v any) Param {
	return Param{Get: func() any { return v }}
}
