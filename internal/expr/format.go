package expr

import (
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
