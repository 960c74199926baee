package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// collMod of a view: viewOn and pipeline replace the view's definition,
// each alone or both, as mongod's collMod does; any other option is
// refused as mongod refuses it on a view, and viewOn and pipeline on a
// collection. The definition is checked as create checks it (the
// pipeline, the collation of a view it now stands on) and for a cycle
// through the views it stands on. The change is one catalog write with
// its modify event, which database and cluster streams with
// showExpandedEvents see with the view's new definition.

// notOnViewOptions are the collMod options mongod refuses on a view, in
// the order it checks them.
var notOnViewOptions = []string{"index", "validator", "validationLevel", "validationAction",
	preImagesOption, catalog.ExpireAfterOption}

// viewModOnCollection refuses viewOn and pipeline on a collection, in
// mongod's order.
func viewModOnCollection(r *request) error {
	for _, k := range []string{"pipeline", "viewOn"} {
		if _, ok := bsonutil.Field(r.body, k); ok {
			return mongoerr.Newf(mongoerr.InvalidOptions, "option only supported on a view: %s", k)
		}
	}
	return nil
}

// collModView changes the view c.
func collModView(h *Handler, c *docstore.Collection, r *request) (bson.D, error) {
	if err := checkViewModOptions(h, r); err != nil {
		return nil, err
	}
	e := c.Edit()
	defer e.Close()
	opts, changed, err := viewModDefinition(r, e.Meta())
	if err != nil || !changed {
		return bson.D{}, err
	}
	on, _ := bsonutil.Field(opts, "viewOn")
	if err := h.checkViewCollation(r.db, c.Meta().Name, on.(string), viewCollation(e.Meta())); err != nil {
		return nil, err
	}
	if err := h.checkViewCycle(r.db, c.Meta().Name, on.(string)); err != nil {
		return nil, err
	}
	e.SetOptions(opts)
	return bson.D{}, e.Commit(&docstore.Modify{})
}

// checkViewModOptions refuses what collMod may not do to a view: an
// option of collections only, and, with access control on, a new viewOn
// without a new pipeline or the other way round (either alone could show
// more of the underlying collection than the user may read).
func checkViewModOptions(h *Handler, r *request) error {
	_, hasOn := bsonutil.Field(r.body, "viewOn")
	_, hasPipeline := bsonutil.Field(r.body, "pipeline")
	if h.deps.Auth != nil && h.deps.Auth.Enabled() && hasOn != hasPipeline {
		return mongoerr.New(mongoerr.InvalidOptions, "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled")
	}
	for _, k := range notOnViewOptions {
		if _, ok := bsonutil.Field(r.body, k); ok {
			return mongoerr.Newf(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
	}
	if _, ok := bsonutil.Field(r.body, "timeseries"); ok {
		return mongoerr.New(mongoerr.InvalidOptions, "option only supported on a time-series collection: timeseries")
	}
	return nil
}

// viewModDefinition is the view's options with the command's viewOn and
// pipeline, and whether they differ from meta's. An empty viewOn leaves
// the view's, as on mongod.
func viewModDefinition(r *request, meta *catalog.Collection) (bson.D, bool, error) {
	opts := append(bson.D(nil), meta.Options...)
	changed := false
	if v, ok := bsonutil.Field(r.body, "pipeline"); ok {
		stages, isArr := v.(bson.A)
		if !isArr {
			return nil, false, wrongType("collMod", "pipeline", v, "array")
		}
		if _, err := aggregate.Parse(stages, aggregate.Options{}); err != nil {
			return nil, false, mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "%s", mongoerr.As(err).Msg)
		}
		opts, changed = bsonutil.WithField(opts, "pipeline", stages), true
	}
	if v, ok := bsonutil.Field(r.body, "viewOn"); ok {
		on, isString := v.(string)
		if !isString {
			return nil, false, wrongType("collMod", "viewOn", v, "string")
		}
		if on != "" {
			opts, changed = bsonutil.WithField(opts, "viewOn", on), true
		}
	}
	return opts, changed, nil
}

// checkViewCycle refuses a view on viewOn that would stand, through the
// views under it, on itself, with mongod's message (the view, then the
// chain back to it), or on more views than mongod allows.
func (h *Handler) checkViewCycle(db, name, viewOn string) error {
	chain := []string{name}
	for on := viewOn; ; {
		chain = append(chain, on)
		if on == name {
			path := make([]string, len(chain))
			for i, c := range chain {
				path[i] = db + "." + c
			}
			return mongoerr.Newf(mongoerr.GraphContainsCycle, "View cycle detected: %s => %s", db+"."+name, strings.Join(path, " => "))
		}
		if len(chain) > maxViewDepth {
			return mongoerr.Newf(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", maxViewDepth)
		}
		c := h.deps.Store.Collection(db, on)
		if c == nil || !isView(c.Meta()) {
			return nil
		}
		next, _ := bsonutil.Field(c.Meta().Options, "viewOn")
		on, _ = next.(string)
	}
}
