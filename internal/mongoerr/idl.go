package mongoerr

import (
	"slices"
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// The errors of mongod's IDL parser, which reads every command's fields
// before the command runs: any layer that reads a command's options
// refuses a bad one with these words.

// WrongType is the error for a field of the wrong BSON type: expected is
// one type name, or a bracketed list of them.
func WrongType(cmd, field string, v any, expected string) error {
	plural := ""
	if strings.HasPrefix(expected, "[") {
		plural = "s"
	}
	return Newf(TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type%s '%s'", cmd, field, bsonutil.TypeName(v), plural, expected)
}

// Enum reads an enumerated string field: v when it is one of allowed,
// else mongod's BadValue naming the field.
func Enum(field string, v any, allowed ...string) (string, error) {
	if s, ok := v.(string); ok && slices.Contains(allowed, s) {
		return s, nil
	}
	return "", Newf(BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", bsonutil.Format(v), field)
}
