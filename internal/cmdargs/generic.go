package cmdargs

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The generic fields whose values every command checks the same way:
// the Stable API parameters and the write concern.

// APIParameters are the Stable API fields a client may send with any
// command.
type APIParameters struct {
	Version string
	Strict  bool
	// VersionSet and ModifiersSet: the fields were sent, whatever their
	// value; mongod asks for a version when apiStrict or
	// apiDeprecationErrors is present, even false.
	VersionSet, ModifiersSet bool
}

// ReadAPIParameters reads the fields with the types of mongod's
// APIParametersFromClient, a string and two booleans, and checks them
// as mongod does: apiStrict and apiDeprecationErrors need an apiVersion,
// and the version must be "1".
func ReadAPIParameters(body bson.D) (APIParameters, error) {
	p, err := readAPIFields(body)
	switch {
	case err != nil:
		return p, err
	case p.ModifiersSet && !p.VersionSet:
		return p, mongoerr.New(mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
	case p.VersionSet && p.Version != "1":
		return p, mongoerr.New(mongoerr.APIVersionError, `API version must be "1"`)
	}
	return p, nil
}

func readAPIFields(body bson.D) (APIParameters, error) {
	var p APIParameters
	for _, e := range body {
		var ok bool
		switch e.Key {
		case "apiVersion":
			p.Version, ok = e.Value.(string)
			p.VersionSet = true
			if !ok {
				return p, mongoerr.WrongType("APIParametersFromClient", e.Key, e.Value, "string")
			}
		case "apiStrict":
			p.ModifiersSet = true
			if p.Strict, ok = e.Value.(bool); !ok {
				return p, mongoerr.WrongType("APIParametersFromClient", e.Key, e.Value, "bool")
			}
		case "apiDeprecationErrors":
			p.ModifiersSet = true
			if _, ok = e.Value.(bool); !ok {
				return p, mongoerr.WrongType("APIParametersFromClient", e.Key, e.Value, "bool")
			}
		}
	}
	return p, nil
}

// SyncRequested reads the write concern: j: true or w: "majority" waits
// for the journal, as MongoDB's standalone does.
func (c Call) SyncRequested() (bool, error) {
	wc, err := c.OptDoc("writeConcern")
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

// CheckWriteConcernReach refuses, as mongod does, a write concern that
// asks for acknowledgement from other members when the server is not a
// replica set member: w above 1, or a named (tag) mode other than
// "majority". A replica set member accepts them (and waits for them
// elsewhere).
func (c Call) CheckWriteConcernReach(replicaSetMember bool) error {
	if replicaSetMember {
		return nil
	}
	v, _ := bsonutil.Field(c.Body, "writeConcern")
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
