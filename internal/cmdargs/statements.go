package cmdargs

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// statementShape is what mongod's command parser checks of each statement
// of a write before anything runs: a statement it refuses fails the whole
// command (code 40415, 40414 or 14), it is not a write error.
type statementShape struct {
	path     string // "update.updates"
	known    []string
	required []string
	docs     []string // fields that must be objects
	// values check a field's value as its IDL type's deserializer does.
	values map[string]func(any) error
}

var (
	updateFields = []string{"q", "u", "upsert", "multi", "arrayFilters", "hint", "collation", "c", "sort", "upsertSupplied"}
	deleteFields = []string{"q", "limit", "hint", "collation"}
	updateShape  = statementShape{path: "update.updates", known: updateFields, required: []string{"q", "u"}, docs: []string{"q"}}
	deleteShape  = statementShape{path: "delete.deletes", known: deleteFields, required: []string{"q", "limit"}, docs: []string{"q"},
		values: map[string]func(any) error{"limit": func(v any) error { _, err := DeleteLimit(v); return err }}}
)

// IsUpdateStatementField and IsDeleteStatementField report whether an
// update's or a delete's statement may have the field key.
func IsUpdateStatementField(key string) bool { return slices.Contains(updateFields, key) }

// IsDeleteStatementField: see IsUpdateStatementField.
func IsDeleteStatementField(key string) bool { return slices.Contains(deleteFields, key) }

// CheckUpdateStatements and CheckDeleteStatements refuse the first
// statement of an update's or a delete's that mongod's parser refuses.
func CheckUpdateStatements(stmts []bson.D) error { return updateShape.check(stmts) }

// CheckDeleteStatements: see CheckUpdateStatements.
func CheckDeleteStatements(stmts []bson.D) error { return deleteShape.check(stmts) }

func (s statementShape) check(stmts []bson.D) error {
	for _, st := range stmts {
		for _, e := range st {
			if !slices.Contains(s.known, e.Key) {
				return mongoerr.Newf(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", s.path, e.Key)
			}
		}
		for _, f := range s.required {
			if _, ok := bsonutil.Field(st, f); !ok {
				return mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", s.path, f)
			}
		}
		for _, f := range s.docs {
			if v, _ := bsonutil.Field(st, f); !isDoc(v) {
				return mongoerr.WrongType(s.path, f, v, "object")
			}
		}
		for f, check := range s.values {
			if v, ok := bsonutil.Field(st, f); ok {
				if err := check(v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// DeleteLimit reads a delete statement's limit as mongod's
// readMultiDeleteProperty does: as a double (a value that is no number
// counts as 0, BSONElement::numberDouble's answer), which must be 0 (all
// matches) or 1, printed as C++ prints a double.
func DeleteLimit(v any) (int, error) {
	var limit float64
	if bsonutil.IsNumber(v) {
		limit = bsonutil.ToFloat(v)
	}
	if limit != 0 && limit != 1 {
		return 0, mongoerr.Newf(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", bsonutil.StreamDouble(limit))
	}
	return int(limit), nil
}

func isDoc(v any) bool {
	_, ok := v.(bson.D)
	return ok
}
