package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// readConcernRule is what a stage's LiteParsed::supportsReadConcern says
// in mongod 8.0.
type readConcernRule int

const (
	readConcernAny           readConcernRule = iota // the default: every level
	readConcernNotLinearized                        // $out and $merge
	readConcernLocalOnly                            // onlyReadConcernLocalSupported
)

// readConcernRules are the stages whose read concern support is not the
// default; every other stage takes every level.
func readConcernRules() map[string]readConcernRule {
	return map[string]readConcernRule{
		"$out": readConcernNotLinearized, "$merge": readConcernNotLinearized,
		"$currentOp": readConcernLocalOnly, "$listLocalSessions": readConcernLocalOnly,
	}
}

// CheckReadConcern refuses a read concern level that a top-level stage
// of the pipeline does not support, with the stage's words; the caller
// adds the command's context, as mongod does before the command runs.
func CheckReadConcern(stages bson.A, level string) error {
	rules := readConcernRules()
	for _, raw := range stages {
		spec, ok := raw.(bson.D)
		if !ok || len(spec) != 1 {
			continue
		}
		if err := stageReadConcern(rules[spec[0].Key], spec[0].Key, level); err != nil {
			return err
		}
	}
	return nil
}

func stageReadConcern(rule readConcernRule, stage, level string) error {
	switch {
	case rule == readConcernNotLinearized && level == "linearizable":
		return mongoerr.Newf(mongoerr.InvalidOptions, "%s cannot be used with a 'linearizable' read concern level", stage)
	case rule == readConcernLocalOnly && level != "local":
		return mongoerr.Newf(mongoerr.InvalidOptions, "Aggregation stage %s cannot run with a readConcern other than 'local'. Current readConcern: %s", stage, level)
	}
	return nil
}
