package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// CommandLayerStages are the stages the commands layer runs itself, off
// the pipeline Parse sees: the writing stages, a change stream and the
// database-level $currentOp.
var CommandLayerStages = []string{"$changeStream", "$currentOp", "$merge", "$out"}

// apiStrictRule is how mongod 8.0 registers a stage for apiStrict
// (REGISTER_DOCUMENT_SOURCE's AllowedWithApiStrict).
type apiStrictRule int

const (
	apiAlways        apiStrictRule = iota // kAlways
	apiNeverInV1                          // kNeverInVersion1
	apiCollStatsOnly                      // $collStats' kConditionally: count only
)

// apiStrictRules holds every stage Mayfly knows, as mongod registers it.
func apiStrictRules() map[string]apiStrictRule {
	rules := map[string]apiStrictRule{
		"$listLocalSessions": apiNeverInV1, "$currentOp": apiNeverInV1,
		"$collStats": apiCollStatsOnly,
	}
	for _, name := range AtlasSearchStageNames() {
		rules[name] = apiNeverInV1
	}
	for _, name := range append(StageNames(), CommandLayerStages...) {
		if _, ok := rules[name]; !ok {
			rules[name] = apiAlways
		}
	}
	return rules
}

// CheckAPIStrict refuses, under apiStrict with API version 1, a stage
// outside that version, in the pipeline or any pipeline nested in it,
// as mongod's LiteParsedPipeline does before the command runs. Stages it
// does not know are left for Parse to refuse.
func CheckAPIStrict(stages bson.A) error {
	rules := apiStrictRules()
	for _, raw := range stages {
		spec, ok := raw.(bson.D)
		if !ok || len(spec) != 1 {
			continue
		}
		if err := checkStageAPIStrict(rules, spec[0]); err != nil {
			return err
		}
		for _, sub := range nestedPipelines(spec[0]) {
			if err := CheckAPIStrict(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkStageAPIStrict(rules map[string]apiStrictRule, spec bson.E) error {
	switch rules[spec.Key] {
	case apiNeverInV1:
		return mongoerr.Newf(mongoerr.APIStrictError, "%s is not allowed with 'apiStrict: true' in API Version 1", spec.Key)
	case apiCollStatsOnly:
		opts, _ := spec.Value.(bson.D)
		for _, option := range []string{"latencyStats", "queryExecStats", "storageStats"} {
			if _, ok := bsonutil.Field(opts, option); ok {
				return mongoerr.New(mongoerr.APIStrictError, "only the 'count' option to $collStats is supported in API Version 1")
			}
		}
	}
	return nil
}

// nestedPipelines are the sub-pipelines of $facet, $lookup and
// $unionWith, which mongod checks as it checks the outer one.
func nestedPipelines(spec bson.E) []bson.A {
	d, _ := spec.Value.(bson.D)
	var subs []bson.A
	switch spec.Key {
	case "$facet":
		for _, e := range d {
			if a, ok := e.Value.(bson.A); ok {
				subs = append(subs, a)
			}
		}
	case "$lookup", "$unionWith":
		if a, ok := bsonutil.Field(d, "pipeline"); ok {
			if a, ok := a.(bson.A); ok {
				subs = append(subs, a)
			}
		}
	}
	return subs
}
