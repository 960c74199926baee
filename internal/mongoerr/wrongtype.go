package mongoerr

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// WrongType is mongod's TypeMismatch for a field cmd.field holding v
// where expected was wanted: a type name, or a list of them in brackets
// ("[long, int]"), which makes the message say "types".
func WrongType(cmd, field string, v any, expected string) error {
	plural := ""
	if strings.HasPrefix(expected, "[") {
		plural = "s"
	}
	return Newf(TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type%s '%s'", cmd, field, bsonutil.TypeName(v), plural, expected)
}
