package ddl

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Views (executor/views.go) are read-only collections defined by a
// pipeline over another collection or view. create records one from
// viewOn and pipeline; collMod replaces either or both, as mongod's
// collMod does, and refuses any other option on a view, and viewOn and
// pipeline on a collection. A definition is checked as create checks it
// (the pipeline, the collation of a view it stands on) and for a cycle
// through the views it stands on.

// CreateView records the view db.name from create's options.
func CreateView(store *docstore.Store, db, name string, opts bson.D) error {
	on, _ := bsonutil.Field(opts, "viewOn")
	source, ok := on.(string)
	if !ok {
		return mongoerr.WrongType("create", "viewOn", on, "string")
	}
	if source == "" {
		return mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
	}
	stages, err := viewPipeline(opts)
	if err != nil {
		return err
	}
	for _, e := range opts {
		if e.Key != "viewOn" && e.Key != "pipeline" && e.Key != "collation" {
			return mongoerr.Newf(mongoerr.InvalidOptions, "option '%s' is not allowed with a view", e.Key)
		}
	}
	coll, err := CreateCollation(opts)
	if err != nil {
		return err
	}
	if err := checkViewCollation(store, db, name, source, coll); err != nil {
		return err
	}
	raw := bson.D{{Key: "viewOn", Value: source}, {Key: "pipeline", Value: stages}}
	if coll != nil {
		raw = append(raw, bson.E{Key: "collation", Value: coll})
	}
	_, err = store.CreateCollection(db, name, docstore.CreateOptions{Raw: raw})
	return err
}

// viewPipeline is create's pipeline for a view (empty when absent),
// parsed as a view's pipeline is.
func viewPipeline(opts bson.D) (bson.A, error) {
	stages := bson.A{}
	if pv, ok := bsonutil.Field(opts, "pipeline"); ok {
		a, isArr := pv.(bson.A)
		if !isArr {
			return nil, mongoerr.WrongType("create", "pipeline", pv, "array")
		}
		stages = a
	}
	if _, err := aggregate.Parse(stages, aggregate.Options{}); err != nil {
		return nil, mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "%s", mongoerr.As(err).Msg)
	}
	return stages, nil
}

// CreateCollation reads create's collation option: the full spec to keep
// in the options, nil for none or simple.
func CreateCollation(opts bson.D) (bson.D, error) {
	v, _ := bsonutil.Field(opts, "collation")
	c, err := collation.Parse(v)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Spec(), nil
}

// checkViewCollation applies mongod's rule that a view defined on another
// view has that view's collation.
func checkViewCollation(store *docstore.Store, db, name, on string, coll bson.D) error {
	c := store.Collection(db, on)
	if c == nil || !executor.IsView(c.Meta()) {
		return nil
	}
	if bsonutil.Compare(executor.ViewCollation(c.Meta()), coll) != 0 {
		return mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "View %s.%s has conflicting collation with view %s.%s", db, name, db, on)
	}
	return nil
}

// notOnViewOptions are the collMod options mongod refuses on a view, in
// the order it checks them.
var notOnViewOptions = []string{"index", "validator", "validationLevel", "validationAction",
	changestream.PreImagesOption, catalog.ExpireAfterOption}

// ViewModOnCollection refuses viewOn and pipeline on a collection, in
// mongod's order.
func ViewModOnCollection(opts bson.D) error {
	for _, k := range []string{"pipeline", "viewOn"} {
		if _, ok := bsonutil.Field(opts, k); ok {
			return mongoerr.Newf(mongoerr.InvalidOptions, "option only supported on a view: %s", k)
		}
	}
	return nil
}

// ModView changes the view c by collMod's options; authEnabled: access
// control is on.
func ModView(store *docstore.Store, c *docstore.Collection, opts bson.D, authEnabled bool) error {
	if err := checkViewModOptions(opts, authEnabled); err != nil {
		return err
	}
	e := c.Edit()
	defer e.Close()
	options, changed, err := viewModDefinition(opts, e.Meta())
	if err != nil || !changed {
		return err
	}
	meta := e.Meta()
	on, _ := bsonutil.Field(options, "viewOn")
	if err := checkViewCollation(store, meta.DB, meta.Name, on.(string), executor.ViewCollation(meta)); err != nil {
		return err
	}
	if err := checkViewCycle(store, meta.DB, meta.Name, on.(string)); err != nil {
		return err
	}
	e.SetOptions(options)
	return e.Commit(&docstore.Modify{})
}

// checkViewModOptions refuses what collMod may not do to a view: an
// option of collections only, and, with access control on, a new viewOn
// without a new pipeline or the other way round (either alone could show
// more of the underlying collection than the user may read).
func checkViewModOptions(opts bson.D, authEnabled bool) error {
	_, hasOn := bsonutil.Field(opts, "viewOn")
	_, hasPipeline := bsonutil.Field(opts, "pipeline")
	if authEnabled && hasOn != hasPipeline {
		return mongoerr.New(mongoerr.InvalidOptions, "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled")
	}
	for _, k := range notOnViewOptions {
		if _, ok := bsonutil.Field(opts, k); ok {
			return mongoerr.Newf(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
	}
	if _, ok := bsonutil.Field(opts, "timeseries"); ok {
		return mongoerr.New(mongoerr.InvalidOptions, "option only supported on a time-series collection: timeseries")
	}
	return nil
}

// viewModDefinition is the view's options with the command's viewOn and
// pipeline, and whether they differ from meta's. An empty viewOn leaves
// the view's, as on mongod.
func viewModDefinition(opts bson.D, meta *catalog.Collection) (bson.D, bool, error) {
	options := append(bson.D(nil), meta.Options...)
	changed := false
	if v, ok := bsonutil.Field(opts, "pipeline"); ok {
		stages, isArr := v.(bson.A)
		if !isArr {
			return nil, false, mongoerr.WrongType("collMod", "pipeline", v, "array")
		}
		if _, err := aggregate.Parse(stages, aggregate.Options{}); err != nil {
			return nil, false, mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "%s", mongoerr.As(err).Msg)
		}
		options, changed = bsonutil.WithField(options, "pipeline", stages), true
	}
	if v, ok := bsonutil.Field(opts, "viewOn"); ok {
		on, isString := v.(string)
		if !isString {
			return nil, false, mongoerr.WrongType("collMod", "viewOn", v, "string")
		}
		if on != "" {
			options, changed = bsonutil.WithField(options, "viewOn", on), true
		}
	}
	return options, changed, nil
}

// checkViewCycle refuses a view on viewOn that would stand, through the
// views under it, on itself, with mongod's message (the view, then the
// chain back to it), or on more views than mongod allows.
func checkViewCycle(store *docstore.Store, db, name, viewOn string) error {
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
		if len(chain) > executor.MaxViewDepth {
			return mongoerr.Newf(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", executor.MaxViewDepth)
		}
		c := store.Collection(db, on)
		if c == nil || !executor.IsView(c.Meta()) {
			return nil
		}
		next, _ := bsonutil.Field(c.Meta().Options, "viewOn")
		on, _ = next.(string)
	}
}
