package diag

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// ValidateReport is validate's report of c's check, in mongod's fields.
func ValidateReport(c *docstore.Collection, res *docstore.ValidateResult) bson.D {
	keys, details := bson.D{}, bson.D{}
	for _, ix := range res.Indexes {
		keys = append(keys, bson.E{Key: ix.Name, Value: docstore.Num(ix.Keys)})
		details = append(details, bson.E{Key: ix.Name, Value: bson.D{{Key: "valid", Value: ix.Valid}}})
	}
	out := bson.D{
		{Key: "ns", Value: c.Namespace()},
		{Key: "uuid", Value: c.Meta().UUID},
		{Key: "nInvalidDocuments", Value: docstore.Num(res.InvalidDocs)},
		{Key: "nNonCompliantDocuments", Value: int32(0)},
		{Key: "nrecords", Value: docstore.Num(res.Records)},
		{Key: "nIndexes", Value: int32(len(res.Indexes))},
		{Key: "keysPerIndex", Value: keys},
		{Key: "indexDetails", Value: details},
		{Key: "valid", Value: res.Valid()},
		{Key: "repaired", Value: false},
		{Key: "warnings", Value: array(res.Warnings)},
		{Key: "errors", Value: array(res.Errors)},
		{Key: "extraIndexEntries", Value: array(res.ExtraEntries)},
		{Key: "missingIndexEntries", Value: array(res.MissingEntries)},
		{Key: "corruptRecords", Value: append(bson.A{}, res.CorruptRecords...)},
	}
	if !res.Valid() {
		out = append(out, bson.E{Key: "advice", Value: "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for recovery steps."})
	}
	return out
}

// array is xs as a BSON array, empty rather than null when xs is.
func array[T any](xs []T) bson.A {
	out := make(bson.A, 0, len(xs))
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}
