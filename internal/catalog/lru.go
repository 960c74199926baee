package catalog

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// LRULimitOption is the index option that bounds a collection by
// documents and bytes, evicting the lowest values of the index's field.
const LRULimitOption = "lruLimit"

// applyLRULimit reads lruLimit: {documents: N, bytes: B}, either or both,
// each a positive whole number, on a single-field index other than _id.
func applyLRULimit(ix *Index, v any, spec bson.D) error {
	d, ok := v.(bson.D)
	if !ok {
		return mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field '%s' must be an object, but got %s", bsonutil.Format(spec), LRULimitOption, bsonutil.TypeName(v))
	}
	if len(ix.Fields) != 1 || isIDKey(ix.Fields) {
		return lruError(spec, "lruLimit indexes are single-field indexes on a field other than _id")
	}
	for _, e := range d {
		n, err := lruCount(e, spec)
		if err != nil {
			return err
		}
		switch e.Key {
		case "documents":
			ix.LRUDocs = n
		case "bytes":
			ix.LRUBytes = n
		default:
			return lruError(spec, "unknown lruLimit field '"+e.Key+"': it takes 'documents' and 'bytes'")
		}
	}
	if !ix.HasLRU() {
		return lruError(spec, "lruLimit needs 'documents', 'bytes' or both")
	}
	return nil
}

func lruCount(e bson.E, spec bson.D) (int64, error) {
	if !bsonutil.IsNumber(e.Value) {
		return 0, mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: lruLimit.%s must be a number, but got %s", bsonutil.Format(spec), e.Key, bsonutil.TypeName(e.Value))
	}
	f := bsonutil.ToFloat(e.Value)
	if math.IsNaN(f) || f < 1 || f != math.Trunc(f) || f > math.MaxInt64/2 {
		return 0, lruError(spec, "lruLimit."+e.Key+" must be a positive whole number, got "+bsonutil.Format(e.Value))
	}
	return int64(f), nil
}

func lruError(spec bson.D, reason string) error {
	return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: %s", bsonutil.Format(spec), reason)
}

// ModLRULimit replaces ix's lruLimit with v ({documents, bytes} as
// createIndexes takes it), for collMod; spec is the index's for messages.
// The rules are createIndexes': the errors keep their messages.
func ModLRULimit(ix *Index, v any, spec bson.D) error {
	next := *ix
	next.LRUDocs, next.LRUBytes = 0, 0
	if err := applyLRULimit(&next, v, spec); err != nil {
		return err
	}
	if err := checkExpireElements(&next, spec); err != nil {
		return err
	}
	ix.LRUDocs, ix.LRUBytes = next.LRUDocs, next.LRUBytes
	return nil
}
