package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// ParseVerbosity reads explain's verbosity (raw; present: given at all):
// allPlansExecution when absent, as on mongod.
func ParseVerbosity(raw any, present bool) (Verbosity, error) {
	if !present {
		return AllPlansExecution, nil
	}
	s, isStr := raw.(string)
	if !isStr {
		return 0, mongoerr.New(mongoerr.FailedToParse, "explain verbosity must be a string")
	}
	switch s {
	case "queryPlanner":
		return QueryPlannerOnly, nil
	case "executionStats":
		return ExecutionStats, nil
	case "allPlansExecution":
		return AllPlansExecution, nil
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
}

// Reply is mongod's explain reply around ex at verbosity v: the plan,
// then the command explained (cmd, with its $db) and the server it ran
// on (serverInfo).
func (ex *Explained) Reply(v Verbosity, cmd, serverInfo bson.D) bson.D {
	out := bson.D{{Key: "explainVersion", Value: "1"}}
	if ex.Stages != nil {
		out = append(out, bson.E{Key: "stages", Value: ex.Stages})
	} else {
		out = append(out, bson.E{Key: "queryPlanner", Value: ex.QueryPlanner()})
		if v >= ExecutionStats {
			out = append(out, bson.E{Key: "executionStats", Value: ex.ExecutionStats(v)})
		}
	}
	return append(out,
		bson.E{Key: "command", Value: cmd},
		bson.E{Key: "serverInfo", Value: serverInfo},
		bson.E{Key: "serverParameters", Value: serverParameters()})
}

// serverParameters are the memory limits explain reports; Mayfly applies
// the same 100 MiB defaults.
func serverParameters() bson.D {
	const limit = int32(SortMemoryLimit)
	return bson.D{
		{Key: "internalQueryFacetBufferSizeBytes", Value: limit},
		{Key: "internalQueryFacetMaxOutputDocSizeBytes", Value: limit},
		{Key: "internalLookupStageIntermediateDocumentMaxSizeBytes", Value: limit},
		{Key: "internalDocumentSourceGroupMaxMemoryBytes", Value: limit},
		{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: limit},
		{Key: "internalQueryProhibitBlockingMergeOnMongoS", Value: int32(0)},
		{Key: "internalQueryMaxAddToSetBytes", Value: limit},
		{Key: "internalDocumentSourceSetWindowFieldsMaxMemoryBytes", Value: limit},
		{Key: "internalQueryFrameworkControl", Value: "trySbeRestricted"},
		{Key: "internalQueryPlannerIgnoreIndexWithCollationForRegex", Value: int32(1)},
	}
}
