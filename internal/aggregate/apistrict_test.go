package aggregate

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestAPIStrictStages: every stage Mayfly knows has a row saying whether
// mongod 8.0 allows it under apiStrict in API version 1 (its
// REGISTER_DOCUMENT_SOURCE flag), and CheckAPIStrict answers so, alone
// and nested in $facet, $lookup and $unionWith.
func TestAPIStrictStages(t *testing.T) {
	inV1 := map[string]bool{
		"$addFields": true, "$bucket": true, "$collStats": true, "$count": true, "$documents": true,
		"$facet": true, "$group": true, "$limit": true, "$lookup": true, "$match": true,
		"$project": true, "$replaceRoot": true, "$replaceWith": true, "$sample": true,
		"$set": true, "$skip": true, "$sort": true, "$sortByCount": true, "$unionWith": true,
		"$unset": true, "$unwind": true, "$out": true, "$merge": true, "$changeStream": true,
		"$listLocalSessions": false, "$currentOp": false,
		"$search": false, "$searchMeta": false, "$vectorSearch": false, "$listSearchIndexes": false,
	}
	known := append(append(StageNames(), AtlasSearchStageNames()...), CommandLayerStages...)
	for _, name := range known {
		if _, ok := inV1[name]; !ok {
			t.Errorf("%s has no row: say whether mongod allows it with apiStrict", name)
		}
	}
	for name, want := range inV1 {
		if !slices.Contains(known, name) {
			t.Errorf("row %s names no stage Mayfly knows", name)
		}
		stage := bson.D{{Key: name, Value: bson.D{}}}
		for _, p := range []bson.A{
			{stage},
			{bson.D{{Key: "$facet", Value: bson.D{{Key: "f", Value: bson.A{stage}}}}}},
			{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "o"}, {Key: "pipeline", Value: bson.A{stage}}, {Key: "as", Value: "j"}}}}},
			{bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "o"}, {Key: "pipeline", Value: bson.A{stage}}}}}},
		} {
			err := CheckAPIStrict(p)
			if want && err != nil {
				t.Errorf("%v: %v, want it allowed", p, err)
			}
			msg := name + " is not allowed with 'apiStrict: true' in API Version 1"
			if !want && (errCode(err) != mongoerr.APIStrictError || mongoerr.As(err).Msg != msg) {
				t.Errorf("%v: %v, want (323) %s", p, err, msg)
			}
		}
	}
}

// TestAPIStrictCollStats: $collStats is in API version 1 with count only.
func TestAPIStrictCollStats(t *testing.T) {
	for option, allowed := range map[string]bool{"count": true, "latencyStats": false, "queryExecStats": false, "storageStats": false} {
		err := CheckAPIStrict(bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: option, Value: bson.D{}}}}}})
		if allowed != (err == nil) || (!allowed && errCode(err) != mongoerr.APIStrictError) {
			t.Errorf("$collStats %s: %v", option, err)
		}
	}
}
