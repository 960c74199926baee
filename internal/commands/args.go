package commands

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

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

// checkFields rejects fields that are neither generic nor known to the
// command, as MongoDB's IDL parser does (code 40415).
func checkFields(r *request, known ...string) error {
	return checkFieldsBy(r, func(key string) bool { return contains(known, key) })
}

// checkFieldsBy is checkFields with the command's own fields told by known.
func checkFieldsBy(r *request, known func(key string) bool) error {
	for i, e := range r.body {
		if i == 0 || genericFields[e.Key] || known(e.Key) {
			continue
		}
		return mongoerr.Newf(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", r.name, e.Key)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func wrongType(cmd, field string, v any, expected string) error {
	return mongoerr.WrongType(cmd, field, v, expected)
}

const numberTypes = "[long, int, decimal, double]"

func toInt64(cmd, field string, v any) (int64, error) {
	if !bsonutil.IsNumber(v) {
		return 0, wrongType(cmd, field, v, numberTypes)
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

// optInt reads an optional non-negative integer field.
func optInt(r *request, field string, def int64) (int64, error) {
	v, ok := bsonutil.Field(r.body, field)
	if !ok || v == nil {
		return def, nil
	}
	n, err := toInt64(r.name, field, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
	}
	return n, nil
}

func optDoc(r *request, field string) (bson.D, error) {
	v, ok := bsonutil.Field(r.body, field)
	if !ok || v == nil {
		return nil, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, wrongType(r.name, field, v, "object")
	}
	return d, nil
}

func optBool(r *request, field string) (bool, error) {
	v, ok := bsonutil.Field(r.body, field)
	if !ok || v == nil {
		return false, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	}
	if bsonutil.IsNumber(v) {
		return bsonutil.ToFloat(v) != 0, nil
	}
	return false, wrongType(r.name, field, v, "bool")
}

// collectionArg reads the command's first value as a collection name.
func collectionArg(r *request) (string, error) {
	v := r.body[0].Value
	s, ok := v.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "collection name has invalid type %s", bsonutil.TypeName(v))
	}
	if s == "" {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", r.db)
	}
	return s, nil
}

func docArray(cmd, field string, v any) ([]bson.D, error) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, wrongType(cmd, field, v, "array")
	}
	out := make([]bson.D, 0, len(a))
	for i, x := range a {
		d, ok := x.(bson.D)
		if !ok {
			return nil, wrongType(cmd, fmt.Sprintf("%s.%d", field, i), x, "object")
		}
		out = append(out, d)
	}
	return out, nil
}

// syncRequested reads the write concern: j: true or w: "majority" waits
// for the journal, as MongoDB's standalone does.
func syncRequested(r *request) (bool, error) {
	wc, err := optDoc(r, "writeConcern")
	if err != nil || wc == nil {
		return false, err
	}
	if j, ok := bsonutil.Field(wc, "j"); ok {
		if b, isBool := j.(bool); isBool && b {
			return true, nil
		}
	}
	if w, ok := bsonutil.Field(wc, "w"); ok {
		if s, isStr := w.(string); isStr && s == "majority" {
			return true, nil
		}
	}
	return false, nil
}

// listingArgs reads the filter and nameOnly fields that listDatabases and
// listCollections share.
func listingArgs(r *request) (*query.Filter, bool, error) {
	filterDoc, err := optDoc(r, "filter")
	if err != nil {
		return nil, false, err
	}
	f, err := query.NewFilter(filterDoc)
	if err != nil {
		return nil, false, err
	}
	nameOnly, err := optBool(r, "nameOnly")
	return f, nameOnly, err
}

// checkWriteConcernReach refuses, as mongod does, a write concern that
// asks for acknowledgement from other members when the server is not a
// replica set member: w above 1, or a named (tag) mode other than
// "majority". A replica set member accepts them (and waits for them
// elsewhere).
func checkWriteConcernReach(r *request, replicaSetMember bool) error {
	if replicaSetMember {
		return nil
	}
	v, _ := bsonutil.Field(r.body, "writeConcern")
	wc, _ := v.(bson.D)
	w, ok := bsonutil.Field(wc, "w")
	if !ok {
		return nil
	}
	if s, isStr := w.(string); isStr {
		if s == "majority" {
			return nil
		}
		return mongoerr.Newf(mongoerr.BadValue, "cannot use non-majority 'w' mode \"%s\" when a host is not a member of a replica set", s)
	}
	if bsonutil.IsNumber(w) && bsonutil.ToFloat(w) > 1 {
		return mongoerr.New(mongoerr.BadValue, "cannot use 'w' > 1 when a host is not replicated")
	}
	return nil
}
