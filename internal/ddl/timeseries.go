package ddl

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// A time-series collection is stored as an ordinary collection holding one
// document per measurement, with an internal index on the timeField that
// carries its expireAfterSeconds (internal/timeseries, docs/design/0013).
// Here are create's and collMod's options for one.

// CreateTimeseries fills opt for a create with the timeseries option,
// with the internal time index to build among opt.Indexes; it reports
// whether the create is of a time-series collection. expireAfterSeconds
// is accepted only with timeseries.
func CreateTimeseries(opts bson.D, opt *docstore.CreateOptions) (bool, error) {
	ts, err := docOption(opts, "create", "timeseries")
	if err != nil || ts == nil {
		return false, err // CreateClustered took expireAfterSeconds, or refused it
	}
	if opt.Capped {
		return false, mongoerr.New(mongoerr.InvalidOptions, "Time-series collections cannot be capped")
	}
	o, err := timeseries.Parse(ts)
	if err != nil {
		return false, err
	}
	opt.Raw = append(bson.D{{Key: "timeseries", Value: o.Doc()}}, opt.Raw...)
	exp, hasExp := bsonutil.Field(opts, "expireAfterSeconds")
	var secs int64
	if hasExp {
		if secs, err = timeseries.ExpireAfter(exp); err != nil {
			return false, err
		}
		opt.Raw = append(opt.Raw, bson.E{Key: "expireAfterSeconds", Value: secs})
	}
	ix, err := timeseries.IndexSpec(o, secs, hasExp)
	if err != nil {
		return false, err
	}
	opt.Indexes = []*catalog.Index{ix}
	return true, nil
}

// modTimeseries applies collMod's expireAfterSeconds and
// timeseries.granularity to a time-series collection.
func modTimeseries(e *docstore.CatalogEdit, opts bson.D) error {
	meta := e.Meta()
	ts := timeseries.Of(meta)
	exp, hasExp := bsonutil.Field(opts, "expireAfterSeconds")
	tsMod, err := docOption(opts, "collMod", "timeseries")
	if err != nil {
		return err
	}
	if ts == nil {
		if hasExp || tsMod != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "the collMod options 'expireAfterSeconds' and 'timeseries' apply to time-series collections only in Mayfly")
		}
		return nil
	}
	options := meta.Options
	if tsMod != nil {
		if options, err = timeseries.ModGranularity(options, ts, tsMod); err != nil {
			return err
		}
	}
	if hasExp {
		if options, err = modTimeseriesExpiry(e, options, exp); err != nil {
			return err
		}
	}
	e.SetOptions(options)
	return nil
}

// modTimeseriesExpiry sets or (with "off") removes the TTL of the
// internal time index, and the option listCollections shows.
func modTimeseriesExpiry(e *docstore.CatalogEdit, options bson.D, v any) (bson.D, error) {
	if s, ok := v.(string); ok {
		if s != "off" {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid value for 'expireAfterSeconds': %s", s)
		}
		err := e.ModifyIndex(timeseries.IndexName, func(ix *catalog.Index) error {
			timeseries.ClearIndexExpiry(ix)
			return nil
		})
		return bsonutil.WithoutField(options, "expireAfterSeconds"), err
	}
	secs, err := timeseries.ExpireAfter(v)
	if err != nil {
		return nil, err
	}
	err = e.ModifyIndex(timeseries.IndexName, func(ix *catalog.Index) error {
		timeseries.SetIndexExpiry(ix, secs)
		return nil
	})
	return bsonutil.WithField(options, "expireAfterSeconds", secs), err
}
