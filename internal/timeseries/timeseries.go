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

// IndexSpec is the specification of the internal time index of a
// collection with options o, carrying its expireAfterSeconds as a TTL
// when expire.
func IndexSpec(o Options, secs int64, expire bool) (*catalog.Index, error) {
	spec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: o.TimeField, Value: int32(1)}}}, {Key: "name", Value: IndexName}}
	if expire {
		spec = append(spec, bson.E{Key: "expireAfterSeconds", Value: int32(secs)})
	}
	return catalog.ParseIndexSpec(spec)
}

// ExpireAfter checks a time-series collection's expireAfterSeconds, with
// the code mongod gives it there.
func ExpireAfter(v any) (int64, error) {
	secs, err := catalog.ValidateExpireAfterSeconds(v)
	if err != nil {
		return 0, mongoerr.New(mongoerr.InvalidOptions, mongoerr.As(err).Msg)
	}
	return secs, nil
}

// SetIndexExpiry makes the internal time index ix expire measurements
// secs after their time.
func SetIndexExpiry(ix *catalog.Index, secs int64) {
	ix.TTL, ix.ExpireAfter = true, secs
	ix.Spec = bsonutil.WithField(ix.Spec, "expireAfterSeconds", int32(secs))
}

// ClearIndexExpiry turns the internal time index's expiry off.
func ClearIndexExpiry(ix *catalog.Index) {
	ix.TTL, ix.ExpireAfter = false, 0
	ix.Spec = bsonutil.WithoutField(ix.Spec, "expireAfterSeconds")
}

// Info is a time-series collection's listCollections entry, as mongod
// shows it: no uuid and no idIndex.
func Info(m *catalog.Collection) bson.D {
	return bson.D{
		{Key: "name", Value: m.Name},
		{Key: "type", Value: "timeseries"},
		{Key: "options", Value: m.Options},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}},
	}
}

// Visible reports whether listIndexes and dropIndexes show ix: never the
// internal time index.
func Visible(ix *catalog.Index) bool { return ix.Name != IndexName }

// CheckNewIndexes refuses the internal index's name on any collection m,
// and the TTL indexes a user asks for on a time-series collection: its
// expiry is the collection's expireAfterSeconds.
func CheckNewIndexes(m *catalog.Collection, ixs []*catalog.Index) error {
	for _, ix := range ixs {
		if ix.Name == IndexName {
			return mongoerr.Newf(mongoerr.CannotCreateIndex, "The index name '%s' is reserved for time-series collections", IndexName)
		}
	}
	if Of(m) == nil {
		return nil
	}
	for _, ix := range ixs {
		if ix.TTL || ix.HasLRU() || ix.RefreshOnRead || ix.ExpireElements {
			return mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are not supported on time-series collections; use the collection's expireAfterSeconds")
		}
	}
	return nil
}

// RefuseOut refuses $out over m, a time-series collection, which would
// replace it by an ordinary one.
func RefuseOut(m *catalog.Collection) error {
	if Of(m) == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "$out to a time-series collection is not supported by Mayfly")
}
