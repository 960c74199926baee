package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// aggregateNamespace reads the aggregate command's first value as mongod
// does: a collection name, or the number 1 for a collectionless pipeline.
func aggregateNamespace(r *request) (coll string, collectionless bool, err error) {
	v := r.body[0].Value
	if bsonutil.IsNumber(v) {
		if bsonutil.ToFloat(v) != 1 {
			return "", false, mongoerr.Newf(mongoerr.FailedToParse, "Invalid command format: the '%s' field must specify a collection name or 1", r.body[0].Key)
		}
		return "", true, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, mongoerr.Newf(mongoerr.TypeMismatch, "collection name has invalid type: %s", bsonutil.TypeName(v))
	}
	return s, false, nil
}

// checkPipelineArg requires the pipeline array; a collectionless pipeline
// must have a first stage ($currentOp and the like).
func checkPipelineArg(r *request, collectionless bool) error {
	v, ok := bsonutil.Field(r.body, "pipeline")
	if !ok {
		return mongoerr.New(mongoerr.Location40414, "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	stages, ok := v.(bson.A)
	if !ok {
		return wrongType(r.name, "pipeline", v, "array")
	}
	if collectionless && len(stages) == 0 {
		return mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for an empty pipeline.")
	}
	return checkStagesReadConcern(r, stages)
}

// checkStagesReadConcern refuses a read concern level a stage does not
// support, in the words mongod puts around the stage's own.
func checkStagesReadConcern(r *request, stages bson.A) error {
	rc, _ := bsonutil.Field(r.body, "readConcern")
	level, ok := bsonutil.Field(bsonutil.ToD(rc), "level")
	if !ok {
		return nil
	}
	levelName, _ := level.(string)
	err := aggregate.CheckReadConcern(stages, levelName)
	if err == nil {
		return nil
	}
	args := bson.D{{Key: "readConcern", Value: bson.D{{Key: "level", Value: level}, {Key: "provenance", Value: "clientSupplied"}}}}
	return mongoerr.CausedBy("Command "+r.name+" does not support "+bsonutil.Format(args), err)
}
