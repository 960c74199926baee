package commands

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// args is the request as internal/cmdargs reads it.
func (r *request) args() cmdargs.Call {
	return cmdargs.Call{DB: r.db, Name: r.name, Body: r.body}
}

// checkFields rejects fields that are neither generic nor known to the
// command, as MongoDB's IDL parser does (code 40415).
func checkFields(r *request, known ...string) error {
	return r.args().CheckFields(func(key string) bool { return slices.Contains(known, key) })
}

// checkFieldsBy is checkFields with the command's own fields told by known.
func checkFieldsBy(r *request, known func(key string) bool) error {
	return r.args().CheckFields(known)
}

func wrongType(cmd, field string, v any, expected string) error {
	return mongoerr.WrongType(cmd, field, v, expected)
}

// optInt reads an optional non-negative integer field.
func optInt(r *request, field string, def int64) (int64, error) {
	return r.args().OptInt(field, def)
}

func optDoc(r *request, field string) (bson.D, error) { return r.args().OptDoc(field) }

func optBool(r *request, field string) (bool, error) { return r.args().OptBool(field) }

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
