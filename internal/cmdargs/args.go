// Package cmdargs reads a command's arguments as mongod 8.0 does: the
// generic fields any command may carry, the types each command's IDL
// gives its fields (spec.go), and the readers of one field, which refuse
// a wrong value with mongod's code and words. It knows no command's
// meaning: handlers in internal/commands and the packages beside it
// (shardcmds, replcmds) read their arguments through it.
package cmdargs

import (
	"fmt"
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Call is one command as its handler reads it: the database it was sent
// to, its name (the body's first key) and its body.
type Call struct {
	DB   string
	Name string
	Body bson.D
}

// genericFields may appear on any command (driver and session plumbing).
var genericFields = map[string]bool{
	"$db": true, "lsid": true, "$clusterTime": true, "$readPreference": true,
	"readConcern": true, "writeConcern": true, "maxTimeMS": true, "comment": true,
	"apiVersion": true, "apiStrict": true, "apiDeprecationErrors": true,
	"$audit": true, "$client": true, "$configServerState": true, "$gleStats": true,
	"$oplogQueryData": true, "$queryOptions": true, "$replData": true,
	"txnNumber": true, "autocommit": true, "startTransaction": true,
	"mayBypassWriteBlocking": true, "$configTime": true, "$topologyTime": true,
	"databaseVersion": true, "shardVersion": true, "clientOperationKey": true,
}

// IsGeneric reports whether key is a field any command may carry.
func IsGeneric(key string) bool { return genericFields[key] }

// Named are a command's fields after its first, its generic arguments
// left out: what getParameter and setParameter name.
func Named(body bson.D) []bson.E {
	var out []bson.E
	for _, e := range body[1:] {
		if !IsGeneric(e.Key) {
			out = append(out, e)
		}
	}
	return out
}

// CheckFields rejects fields that are neither generic nor known to the
// command, as MongoDB's IDL parser does (code 40415).
func (c Call) CheckFields(known func(key string) bool) error {
	for i, e := range c.Body {
		if i == 0 || genericFields[e.Key] || known(e.Key) {
			continue
		}
		return mongoerr.Newf(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", c.Name, e.Key)
	}
	return nil
}

// NumberTypes is how mongod names the types a numeric field takes.
const NumberTypes = "[long, int, decimal, double]"

// Int64 reads v, field of command cmd, as an integral number.
func Int64(cmd, field string, v any) (int64, error) {
	if !bsonutil.IsNumber(v) {
		return 0, mongoerr.WrongType(cmd, field, v, NumberTypes)
	}
	f := bsonutil.ToFloat(v)
	if math.IsNaN(f) || f != math.Trunc(f) {
		if _, isInt := v.(int64); !isInt {
			return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field '%s' value must be an integer, actual value '%s'", field, bsonutil.Format(v))
		}
	}
	switch n := v.(type) {
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	}
	return int64(f), nil
}

// OptInt reads an optional non-negative integer field; def when absent.
func (c Call) OptInt(field string, def int64) (int64, error) {
	v, ok := bsonutil.Field(c.Body, field)
	if !ok || v == nil {
		return def, nil
	}
	n, err := Int64(c.Name, field, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
	}
	return n, nil
}

// OptDoc reads an optional document field; nil when absent or null.
func (c Call) OptDoc(field string) (bson.D, error) {
	v, ok := bsonutil.Field(c.Body, field)
	if !ok || v == nil {
		return nil, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.WrongType(c.Name, field, v, "object")
	}
	return d, nil
}

// OptBool reads an optional boolean field, which a number may stand for.
func (c Call) OptBool(field string) (bool, error) {
	v, ok := bsonutil.Field(c.Body, field)
	if !ok || v == nil {
		return false, nil
	}
	if b, isBool := v.(bool); isBool {
		return b, nil
	}
	if bsonutil.IsNumber(v) {
		return bsonutil.ToFloat(v) != 0, nil
	}
	return false, mongoerr.WrongType(c.Name, field, v, "bool")
}

// String reads a required string field.
func (c Call) String(field string) (string, error) {
	v, ok := bsonutil.Field(c.Body, field)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", c.Name, field)
	}
	s, isString := v.(string)
	if !isString {
		return "", mongoerr.WrongType(c.Name, field, v, "string")
	}
	return s, nil
}

// DocArray reads v, field of command cmd, as an array of documents.
func DocArray(cmd, field string, v any) ([]bson.D, error) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.WrongType(cmd, field, v, "array")
	}
	return appendDocs(make([]bson.D, 0, len(a)), cmd, field, a)
}

// AppendDocArray is DocArray appending the documents to dst, which can
// then be an array in a struct the caller allocates anyway.
func AppendDocArray(dst []bson.D, cmd, field string, v any) ([]bson.D, error) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.WrongType(cmd, field, v, "array")
	}
	return appendDocs(slices.Grow(dst, len(a)), cmd, field, a)
}

func appendDocs(out []bson.D, cmd, field string, a bson.A) ([]bson.D, error) {
	for i, x := range a {
		d, ok := x.(bson.D)
		if !ok {
			return nil, mongoerr.WrongType(cmd, fmt.Sprintf("%s.%d", field, i), x, "object")
		}
		out = append(out, d)
	}
	return out, nil
}
