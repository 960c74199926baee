package commands

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
// The commands here read create's and collMod's options.

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
	o, err := timeseries.Parse(ts)
	if err != nil {
		return nil, err
	}
	opt.Raw = append(bson.D{{Key: "timeseries", Value: o.Doc()}}, opt.Raw...)
	var secs int64
	if hasExp {
		if secs, err = timeseries.ExpireAfter(exp); err != nil {
			return nil, err
		}
		opt.Raw = append(opt.Raw, bson.E{Key: "expireAfterSeconds", Value: secs})
	}
	return timeseries.IndexSpec(o, secs, hasExp)
}

// createTimeseries creates the collection and its internal time index.
func (h *Handler) createTimeseries(db, name string, opt docstore.CreateOptions, ix *catalog.Index) error {
	opt.Indexes = []*catalog.Index{ix}
	_, err := h.deps.Store.CreateCollection(db, name, opt)
	return err
}

// collModTimeseries applies collMod's expireAfterSeconds and
// timeseries.granularity to a time-series collection.
func collModTimeseries(e *docstore.CatalogEdit, r *request) error {
	meta := e.Meta()
	ts := timeseries.Of(meta)
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
		if opts, err = timeseries.ModGranularity(opts, ts, tsMod); err != nil {
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

// modExpiry sets or (with "off") removes the TTL of the internal time
// index, and the option listCollections shows.
func modExpiry(e *docstore.CatalogEdit, opts bson.D, v any) (bson.D, error) {
	if s, ok := v.(string); ok {
		if s != "off" {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid value for 'expireAfterSeconds': %s", s)
		}
		err := e.ModifyIndex(timeseries.IndexName, func(ix *catalog.Index) error {
			timeseries.ClearIndexExpiry(ix)
			return nil
		})
		return bsonutil.WithoutField(opts, "expireAfterSeconds"), err
	}
	secs, err := timeseries.ExpireAfter(v)
	if err != nil {
		return nil, err
	}
	err = e.ModifyIndex(timeseries.IndexName, func(ix *catalog.Index) error {
		timeseries.SetIndexExpiry(ix, secs)
		return nil
	})
	return bsonutil.WithField(opts, "expireAfterSeconds", secs), err
}
