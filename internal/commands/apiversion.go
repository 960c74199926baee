package commands

import (
	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// apiParameters are the Stable API fields a client may send with any
// command.
type apiParameters struct {
	version string
	strict  bool
	// versionSet and modifiersSet: the fields were sent, whatever their
	// value; mongod asks for a version when apiStrict or
	// apiDeprecationErrors is present, even false.
	versionSet, modifiersSet bool
}

// checkAPIParameters applies the Stable API fields as mongod does, before
// authorization and before the command's own arguments: apiStrict and
// apiDeprecationErrors need an apiVersion, the version must be "1", and
// under apiStrict only the commands of version 1 run, and an aggregate
// only the stages of version 1. No command Mayfly
// answers is deprecated in version 1, so apiDeprecationErrors refuses
// nothing.
func checkAPIParameters(r *request, entry command) error {
	p, err := parseAPIParameters(r)
	if err != nil {
		return err
	}
	if p.modifiersSet && !p.versionSet {
		return mongoerr.New(mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
	}
	if p.versionSet && p.version != "1" {
		return mongoerr.New(mongoerr.APIVersionError, `API version must be "1"`)
	}
	if !p.strict {
		return nil
	}
	if !entry.apiV1 {
		return mongoerr.Newf(mongoerr.APIStrictError, "Provided apiStrict:true, but the command %s is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api", entry.name)
	}
	if entry.role == onPrimary && len(r.body) > 0 && r.body[0].Value == "system.js" {
		return mongoerr.Newf(mongoerr.APIStrictError, "Provided apiStrict:true, but the command %s attempts to write to system.js", entry.name)
	}
	if entry.name == "aggregate" {
		return aggregate.CheckAPIStrict(stagesOf(r))
	}
	return nil
}

// parseAPIParameters reads the fields with the types of mongod's
// APIParametersFromClient: a string and two booleans.
func parseAPIParameters(r *request) (apiParameters, error) {
	var p apiParameters
	for _, e := range r.body {
		var ok bool
		switch e.Key {
		case "apiVersion":
			p.version, ok = e.Value.(string)
			p.versionSet = true
			if !ok {
				return p, wrongType("APIParametersFromClient", e.Key, e.Value, "string")
			}
		case "apiStrict":
			p.modifiersSet = true
			if p.strict, ok = e.Value.(bool); !ok {
				return p, wrongType("APIParametersFromClient", e.Key, e.Value, "bool")
			}
		case "apiDeprecationErrors":
			p.modifiersSet = true
			if _, ok = e.Value.(bool); !ok {
				return p, wrongType("APIParametersFromClient", e.Key, e.Value, "bool")
			}
		}
	}
	return p, nil
}
