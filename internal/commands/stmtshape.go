package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// stmtShape is what mongod's command parser checks of each statement of a
// write before anything runs: a statement it refuses fails the whole
// command (code 40415, 40414 or 14), it is not a write error.
type stmtShape struct {
	path     string // "update.updates"
	known    []string
	required []string
	docs     []string // fields that must be objects
}

var (
	updateShape = stmtShape{path: "update.updates", known: updateStmtFields, required: []string{"q", "u"}, docs: []string{"q"}}
	deleteShape = stmtShape{path: "delete.deletes", known: deleteStmtFields, required: []string{"q", "limit"}, docs: []string{"q"}}
)

func (s stmtShape) check(stmts []bson.D) error {
	for _, st := range stmts {
		for _, e := range st {
			if !contains(s.known, e.Key) {
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
				return wrongType(s.path, f, v, "object")
			}
		}
	}
	return nil
}

func isDoc(v any) bool {
	_, ok := v.(bson.D)
	return ok
}
