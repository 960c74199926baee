package timeseries

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// granularities holds, per granularity, mongod's default
// bucketMaxSpanSeconds, in the order granularities may be coarsened in.
var granularities = []struct {
	name    string
	maxSpan int32
}{{"seconds", 3600}, {"minutes", 86400}, {"hours", 2592000}}

func granularityRank(g string) int {
	for i, x := range granularities {
		if x.name == g {
			return i
		}
	}
	return -1
}

// Options are a time-series collection's options as stored.
type Options struct {
	TimeField, MetaField, Granularity string
	MaxSpan                           int32
}

// Doc is the options document listCollections shows.
func (o Options) Doc() bson.D {
	d := bson.D{{Key: "timeField", Value: o.TimeField}}
	if o.MetaField != "" {
		d = append(d, bson.E{Key: "metaField", Value: o.MetaField})
	}
	if o.Granularity != "" {
		d = append(d, bson.E{Key: "granularity", Value: o.Granularity})
	} else {
		d = append(d, bson.E{Key: "bucketRoundingSeconds", Value: o.MaxSpan})
	}
	return append(d, bson.E{Key: "bucketMaxSpanSeconds", Value: o.MaxSpan})
}

var optionNames = []string{"timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"}

// Parse reads create's timeseries option with mongod's rules and errors.
func Parse(ts bson.D) (Options, error) {
	var o Options
	for _, e := range ts {
		if !slices.Contains(optionNames, e.Key) {
			return o, mongoerr.Newf(mongoerr.Location40415, "BSON field 'create.timeseries.%s' is an unknown field.", e.Key)
		}
	}
	var err error
	if o.TimeField, err = stringField(ts, "timeField", true); err != nil {
		return o, err
	}
	if o.MetaField, err = stringField(ts, "metaField", false); err != nil {
		return o, err
	}
	if err := checkFieldNames(o); err != nil {
		return o, err
	}
	if o.Granularity, err = stringField(ts, "granularity", false); err != nil {
		return o, err
	}
	return o, parseBucketing(ts, &o)
}

func stringField(ts bson.D, field string, required bool) (string, error) {
	v, ok := bsonutil.Field(ts, field)
	if !ok {
		if required {
			return "", mongoerr.Newf(mongoerr.Location40414, "BSON field 'timeseries.%s' is missing but a required field", field)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", wrongType("create", field, v)
	}
	return s, nil
}

// wrongType is mongod's TypeMismatch for a timeseries field of cmd that
// is not a string.
func wrongType(cmd, field string, v any) error {
	return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.timeseries.%s' is the wrong type '%s', expected type 'string'", cmd, field, bsonutil.TypeName(v))
}

func checkFieldNames(o Options) error {
	for _, f := range []string{o.TimeField, o.MetaField} {
		if f == "_id" {
			return mongoerr.New(mongoerr.InvalidOptions, "The 'timeField' or 'metaField' cannot be '_id'")
		}
		if f != "" && (f[0] == '$' || strings.Contains(f, ".")) {
			return mongoerr.Newf(mongoerr.InvalidOptions, "Invalid field name for timeseries: '%s'", f)
		}
	}
	if o.TimeField == "" {
		return mongoerr.New(mongoerr.InvalidOptions, "The 'timeField' must be a non-empty string")
	}
	if o.TimeField == o.MetaField {
		return mongoerr.New(mongoerr.InvalidOptions, "The 'metaField' and 'timeField' options cannot have the same value")
	}
	return nil
}

// parseBucketing applies mongod's rules: granularity alone (default
// "seconds"), or bucketMaxSpanSeconds and bucketRoundingSeconds together
// and equal, never both kinds.
func parseBucketing(ts bson.D, o *Options) error {
	span, hasSpan := bsonutil.Field(ts, "bucketMaxSpanSeconds")
	round, hasRound := bsonutil.Field(ts, "bucketRoundingSeconds")
	if !hasSpan && !hasRound || o.Granularity != "" {
		return granularityBucketing(span, hasSpan, hasRound, o)
	}
	if hasSpan != hasRound || !bsonutil.IsNumber(span) || !bsonutil.IsNumber(round) || bsonutil.ToFloat(span) != bsonutil.ToFloat(round) {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' fields must be present together and must be equal")
	}
	s := bsonutil.ToFloat(span)
	if s < 1 || s > 31536000 {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' needs to be between 1 and 31536000")
	}
	o.MaxSpan = int32(s)
	return nil
}

// granularityBucketing sets the span of a granularity; mongod accepts a
// bucketMaxSpanSeconds beside it only at that granularity's default, and
// no bucketRoundingSeconds.
func granularityBucketing(span any, hasSpan, hasRound bool, o *Options) error {
	if o.Granularity == "" {
		o.Granularity = "seconds"
	}
	rank := granularityRank(o.Granularity)
	if rank < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field 'timeseries.granularity' is not a valid value.", o.Granularity)
	}
	o.MaxSpan = granularities[rank].maxSpan
	if hasRound {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' cannot be set together with 'granularity'")
	}
	if hasSpan && (!bsonutil.IsNumber(span) || bsonutil.ToFloat(span) != float64(o.MaxSpan)) {
		return mongoerr.Newf(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %d for the provided granularity", o.MaxSpan)
	}
	return nil
}

// ModGranularity is collMod's timeseries option mod applied to the
// collection's options opts, whose timeseries options are ts: only
// granularity may change, and only coarser.
func ModGranularity(opts, ts, mod bson.D) (bson.D, error) {
	for _, e := range mod {
		if e.Key != "granularity" {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the collMod option 'timeseries.%s' is not supported by Mayfly", e.Key)
		}
	}
	v, _ := bsonutil.Field(mod, "granularity")
	g, ok := v.(string)
	if !ok {
		return nil, wrongType("collMod", "granularity", v)
	}
	to := granularityRank(g)
	if to < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field 'collMod.timeseries.granularity' is not a valid value.", g)
	}
	cur, _ := bsonutil.Field(ts, "granularity")
	curName, _ := cur.(string)
	from := granularityRank(curName)
	if from < 0 || to < from {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.")
	}
	out := bsonutil.WithField(ts, "granularity", g)
	out = bsonutil.WithField(out, "bucketMaxSpanSeconds", granularities[to].maxSpan)
	return bsonutil.WithField(opts, "timeseries", out), nil
}
