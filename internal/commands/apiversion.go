package commands

import (
	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// checkAPIParameters applies the Stable API fields as mongod does, before
// authorization and before the command's own arguments: apiStrict and
// apiDeprecationErrors need an apiVersion, the version must be "1", and
// under apiStrict only the commands of version 1 run, and an aggregate
// only the stages of version 1. No command Mayfly
// answers is deprecated in version 1, so apiDeprecationErrors refuses
// nothing.
func checkAPIParameters(r *request, entry command) error {
	p, err := cmdargs.ReadAPIParameters(r.body)
	if err != nil {
		return err
	}
	if !p.Strict {
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
