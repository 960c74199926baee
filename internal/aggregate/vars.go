package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/query"
)

// checkStageVars refuses, when the pipeline is parsed, a top-level stage
// that reads a variable neither the command's let nor a builtin defines
// (MongoDB's 17276), instead of failing only once a document flows
// through it, or never on an empty collection. Stages that bind their own
// variables ($lookup, $facet, $unionWith sub-pipelines) are checked when
// they run.
func checkStageVars(spec bson.E, let bson.D) error {
	defined := make(map[string]any, len(let))
	for _, e := range let {
		defined[e.Key] = true
	}
	switch spec.Key {
	case "$match":
		if d, ok := spec.Value.(bson.D); ok {
			return query.CheckExprVars(d, defined)
		}
	case "$project", "$addFields", "$set", "$replaceRoot", "$replaceWith", "$group", "$sortByCount":
		return expr.CheckDefined(spec.Value, defined)
	}
	return nil
}
