// Package timeseries holds the rules of a time-series collection: its
// options (timeField, metaField, granularity and bucketing) as create and
// collMod accept them, its internal time index, and the check every
// measurement passes before it is stored. A time-series collection is
// stored as an ordinary collection of one document per measurement
// (docs/design/0013); nothing here touches storage.
package timeseries

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// IndexName names the internal time index. listIndexes and dropIndexes
// never show it: on mongod it has no counterpart a user can see.
const IndexName = "$timeseries_time"

// Of returns the collection's timeseries options, nil for an ordinary
// collection.
func Of(m *catalog.Collection) bson.D {
	v, _ := bsonutil.Field(m.Options, "timeseries")
	d, _ := v.(bson.D)
	return d
}

// TimeField is the collection's timeField, "" for an ordinary collection.
func TimeField(m *catalog.Collection) string {
	v, _ := bsonutil.Field(Of(m), "timeField")
	s, _ := v.(string)
	return s
}

// CheckMeasurement refuses a measurement without a Date in the timeField,
// with mongod's error; a document of an ordinary collection passes.
func CheckMeasurement(m *catalog.Collection, doc bson.D) error {
	tf := TimeField(m)
	if tf == "" {
		return nil
	}
	v, ok := bsonutil.Field(doc, tf)
	if _, isDate := v.(bson.DateTime); !ok || !isDate {
		return mongoerr.Newf(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", tf)
	}
	return nil
}
