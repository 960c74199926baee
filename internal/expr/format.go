package expr

import (
	"math"
	"strconv"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// formatValue renders v as MongoDB's error messages print values; missing
// is spelled MISSING, as in MongoDB's.
func formatValue(v any) string {
	if IsMissing(v) {
		return "MISSING"
	}
	return bsonutil.Format(v)
}

// formatDouble prints integral doubles with a trailing ".0", as MongoDB's
// messages do, so 2.0 is not mistaken for an integer.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan.0"
	case math.IsInf(f, 1):
		return "inf.0"
	case math.IsInf(f, -1):
		return "-inf.0"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
