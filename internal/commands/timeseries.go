package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// A time-series collection is stored as an ordinary collection holding one
// document per measurement, with options.timeseries recording the user's
// options and an internal index on the timeField (docs/design/0013). The
// index carries the collection's expireAfterSeconds as a TTL, so each
// measurement expires exactly, on its own, like any TTL document.

// tsIndexName names the internal time index. listIndexes and dropIndexes
// never show it: on mongod it has no counterpart a user can see.
const tsIndexName = "$timeseries_time"

// tsGranularity holds, per granularity, mongod's default
// bucketMaxSpanSeconds and the order granularities may be coarsened in.
var tsGranularities = []struct {
	name    string
	maxSpan int32
}{{"seconds", 3600}, {"minutes", 86400}, {"hours", 2592000}}

func granularityRank(g string) int {
	for i, x := range tsGranularities {
		if x.name == g {
			return i
		}
	}
	return -1
}

// tsOptions are a time-series collection's options as stored.
type tsOptions struct {
	timeField, metaField, granularity string
	maxSpan                           int32
}

func (o tsOptions) doc() bson.D {
	d := bson.D{{Key: "timeField", Value: o.timeField}}
	if o.metaField != "" {
		d = append(d, bson.E{Key: "metaField", Value: o.metaField})
	}
	if o.granularity != "" {
		d = append(d, bson.E{Key: "granularity", Value: o.granularity})
	} else {
		d = append(d, bson.E{Key: "bucketRoundingSeconds", Value: o.maxSpan})
	}
	return append(d, bson.E{Key: "bucketMaxSpanSeconds", Value: o.maxSpan})
}

// timeseriesOf returns the collection's timeseries options, nil for an
// ordinary collection.
func timeseriesOf(m *catalog.Collection) bson.D {
	v, _ := bsonutil.Field(m.Options, "timeseries")
	d, _ := v.(bson.D)
	return d
}

func tsTimeField(m *catalog.Collection) string {
	s, _ := lookupString(timeseriesOf(m), "timeField")
	return s
}

func tsStringField(ts bson.D, field string, required bool) (string, error) {
	v, ok := bsonutil.Field(ts, field)
	if !ok {
		if required {
			return "", mongoerr.Newf(mongoerr.Location40414, "BSON field 'timeseries.%s' is missing but a required field", field)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", wrongType("create", "timeseries."+field, v, "string")
	}
	return s, nil
}

func parseTimeseries(ts bson.D) (tsOptions, error) {
	var o tsOptions
	for _, e := range ts {
		if !contains([]string{"timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"}, e.Key) {
			return o, mongoerr.Newf(mongoerr.Location40415, "BSON field 'create.timeseries.%s' is an unknown field.", e.Key)
		}
	}
	var err error
	if o.timeField, err = tsStringField(ts, "timeField", true); err != nil {
		return o, err
	}
	if o.metaField, err = tsStringField(ts, "metaField", false); err != nil {
		return o, err
	}
	if err := checkTSFieldNames(o); err != nil {
		return o, err
	}
	if o.granularity, err = tsStringField(ts, "granularity", false); err != nil {
		return o, err
	}
	return o, parseBucketing(ts, &o)
}

func checkTSFieldNames(o tsOptions) error {
	for _, f := range []string{o.timeField, o.metaField} {
		if f == "_id" {
			return mongoerr.New(mongoerr.InvalidOptions, "The 'timeField' or 'metaField' cannot be '_id'")
		}
		if f != "" && (f[0] == '$' || strings.Contains(f, ".")) {
			return mongoerr.Newf(mongoerr.InvalidOptions, "Invalid field name for timeseries: '%s'", f)
		}
	}
	if o.timeField == "" {
		return mongoerr.New(mongoerr.InvalidOptions, "The 'timeField' must be a non-empty string")
	}
	if o.timeField == o.metaField {
		return mongoerr.New(mongoerr.InvalidOptions, "The 'metaField' and 'timeField' options cannot have the same value")
	}
	return nil
}

// parseBucketing applies mongod's rules: granularity alone (default
// "seconds"), or bucketMaxSpanSeconds and bucketRoundingSeconds together
// and equal, never both kinds.
func parseBucketing(ts bson.D, o *tsOptions) error {
	span, hasSpan := bsonutil.Field(ts, "bucketMaxSpanSeconds")
	round, hasRound := bsonutil.Field(ts, "bucketRoundingSeconds")
	if !hasSpan && !hasRound || o.granularity != "" {
		return granularityBucketing(span, hasSpan, hasRound, o)
	}
	if hasSpan != hasRound || !bsonutil.IsNumber(span) || !bsonutil.IsNumber(round) || bsonutil.ToFloat(span) != bsonutil.ToFloat(round) {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' fields must be present together and must be equal")
	}
	s := bsonutil.ToFloat(span)
	if s < 1 || s > 31536000 {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' needs to be between 1 and 31536000")
	}
	o.maxSpan = int32(s)
	return nil
}

// granularityBucketing sets the span of a granularity; mongod accepts a
// bucketMaxSpanSeconds beside it only at that granularity's default, and
// no bucketRoundingSeconds.
func granularityBucketing(span any, hasSpan, hasRound bool, o *tsOptions) error {
	if o.granularity == "" {
		o.granularity = "seconds"
	}
	rank := granularityRank(o.granularity)
	if rank < 0 {
		return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field 'timeseries.granularity' is not a valid value.", o.granularity)
	}
	o.maxSpan = tsGranularities[rank].maxSpan
	if hasRound {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' cannot be set together with 'granularity'")
	}
	if hasSpan && (!bsonutil.IsNumber(span) || bsonutil.ToFloat(span) != float64(o.maxSpan)) {
		return mongoerr.Newf(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %d for the provided granularity", o.maxSpan)
	}
	return nil
}

// timeseriesCreate fills opt for a create with the timeseries option and
// returns the internal time index to build, nil for an ordinary create.
// expireAfterSeconds is accepted only with timeseries.
func timeseriesCreate(r *request, opt *docstore.CreateOptions) (*catalog.Index, error) {
	ts, err := optDoc(r, "timeseries")
	if err != nil {
		return nil, err
	}
	exp, hasExp := bsonutil.Field(r.body, "expireAfterSeconds")
	if ts == nil {
		return nil, nil // clusteredCreate took expireAfterSeconds, or refused it
	}
	if opt.Capped {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Time-series collections cannot be capped")
	}
	o, err := parseTimeseries(ts)
	if err != nil {
		return nil, err
	}
	opt.Raw = append(bson.D{{Key: "timeseries", Value: o.doc()}}, opt.Raw...)
	spec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: o.timeField, Value: int32(1)}}}, {Key: "name", Value: tsIndexName}}
	if hasExp {
		secs, err := tsExpireAfter(exp)
		if err != nil {
			return nil, err
		}
		opt.Raw = append(opt.Raw, bson.E{Key: "expireAfterSeconds", Value: secs})
		spec = append(spec, bson.E{Key: "expireAfterSeconds", Value: int32(secs)})
	}
	return catalog.ParseIndexSpec(spec)
}

func tsExpireAfter(v any) (int64, error) {
	secs, err := catalog.ValidateExpireAfterSeconds(v)
	if err != nil {
		return 0, mongoerr.New(mongoerr.InvalidOptions, mongoerr.As(err).Msg)
	}
	return secs, nil
}

// createTimeseries creates the collection and its internal time index.
func (h *Handler) createTimeseries(db, name string, opt docstore.CreateOptions, ix *catalog.Index) error {
	opt.Indexes = []*catalog.Index{ix}
	_, err := h.deps.Store.CreateCollection(db, name, opt)
	return err
}

// timeseriesInfo is a time-series collection's listCollections entry, as
// mongod shows it: no uuid and no idIndex.
func timeseriesInfo(m *catalog.Collection) bson.D {
	return bson.D{
		{Key: "name", Value: m.Name},
		{Key: "type", Value: "timeseries"},
		{Key: "options", Value: m.Options},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}},
	}
}

// visibleIndex reports whether listIndexes and dropIndexes show ix.
func visibleIndex(ix *catalog.Index) bool { return ix.Name != tsIndexName }

// collModTimeseries applies collMod's expireAfterSeconds and
// timeseries.granularity to a time-series collection.
func collModTimeseries(e *docstore.CatalogEdit, r *request) error {
	meta := e.Meta()
	ts := timeseriesOf(meta)
	exp, hasExp := bsonutil.Field(r.body, "expireAfterSeconds")
	tsMod, err := optDoc(r, "timeseries")
	if err != nil {
		return err
	}
	if ts == nil {
		if hasExp || tsMod != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "the collMod options 'expireAfterSeconds' and 'timeseries' apply to time-series collections only in Mayfly")
		}
		return nil
	}
	opts := meta.Options
	if tsMod != nil {
		if opts, err = modGranularity(opts, ts, tsMod); err != nil {
			return err
		}
	}
	if hasExp {
		if opts, err = modExpiry(e, opts, exp); err != nil {
			return err
		}
	}
	e.SetOptions(opts)
	return nil
}

func modGranularity(opts, ts, mod bson.D) (bson.D, error) {
	for _, e := range mod {
		if e.Key != "granularity" {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the collMod option 'timeseries.%s' is not supported by Mayfly", e.Key)
		}
	}
	v, _ := bsonutil.Field(mod, "granularity")
	g, ok := v.(string)
	if !ok {
		return nil, wrongType("collMod", "timeseries.granularity", v, "string")
	}
	to := granularityRank(g)
	if to < 0 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field 'collMod.timeseries.granularity' is not a valid value.", g)
	}
	cur, _ := lookupString(ts, "granularity")
	from := granularityRank(cur)
	if from < 0 || to < from {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.")
	}
	out := setSpecField(ts, "granularity", g)
	out = setSpecField(out, "bucketMaxSpanSeconds", tsGranularities[to].maxSpan)
	return setSpecField(opts, "timeseries", out), nil
}

// modExpiry sets or (with "off") removes the TTL of the internal time
// index, and the option listCollections shows.
func modExpiry(e *docstore.CatalogEdit, opts bson.D, v any) (bson.D, error) {
	if s, ok := v.(string); ok {
		if s != "off" {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid value for 'expireAfterSeconds': %s", s)
		}
		err := e.ModifyIndex(tsIndexName, func(ix *catalog.Index) error {
			ix.TTL, ix.ExpireAfter = false, 0
			ix.Spec = removeSpecField(ix.Spec, "expireAfterSeconds")
			return nil
		})
		return removeSpecField(opts, "expireAfterSeconds"), err
	}
	secs, err := tsExpireAfter(v)
	if err != nil {
		return nil, err
	}
	err = e.ModifyIndex(tsIndexName, func(ix *catalog.Index) error {
		ix.TTL, ix.ExpireAfter = true, secs
		ix.Spec = setSpecField(ix.Spec, "expireAfterSeconds", int32(secs))
		return nil
	})
	return setSpecField(opts, "expireAfterSeconds", secs), err
}

// refuseTimeseriesTTL refuses the internal index's name on any collection,
// and TTL indexes a user asks for on a time-series collection: its expiry
// is the collection's expireAfterSeconds.
func refuseTimeseriesTTL(c *docstore.Collection, ixs []*catalog.Index) error {
	for _, ix := range ixs {
		if ix.Name == tsIndexName {
			return mongoerr.Newf(mongoerr.CannotCreateIndex, "The index name '%s' is reserved for time-series collections", tsIndexName)
		}
	}
	if timeseriesOf(c.Meta()) == nil {
		return nil
	}
	for _, ix := range ixs {
		if ix.TTL || ix.HasLRU() || ix.RefreshOnRead || ix.ExpireElements {
			return mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are not supported on time-series collections; use the collection's expireAfterSeconds")
		}
	}
	return nil
}

// refuseOutToTimeseries refuses $out over a time-series collection, which
// would replace it by an ordinary one.
func refuseOutToTimeseries(c *docstore.Collection) error {
	if c == nil || timeseriesOf(c.Meta()) == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "$out to a time-series collection is not supported by Mayfly")
}
