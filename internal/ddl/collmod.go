package ddl

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// collModKnown are collMod's options besides validation's.
var collModKnown = []string{"index", changestream.PreImagesOption, catalog.ExpireAfterOption, "timeseries", "viewOn", "pipeline"}

// CheckCollModOptions refuses a collMod option Mayfly does not implement.
func CheckCollModOptions(opts bson.D) error {
	for _, e := range opts {
		if !slices.Contains(collModKnown, e.Key) && !IsValidationOption(e.Key) {
			return mongoerr.Newf(mongoerr.InvalidOptions, "the collMod option '%s' is not supported by Mayfly", e.Key)
		}
	}
	return nil
}

// ModExpiry applies a time-series collection's expireAfterSeconds and
// granularity at once; on another collection it checks a clustered
// collection's expireAfterSeconds, which the caller sets once the rest
// of the command is known good (set), with SetClusteredExpiry.
func ModExpiry(e *docstore.CatalogEdit, opts bson.D, now time.Time) (secs int64, set bool, err error) {
	if _, eas := bsonutil.Field(opts, catalog.ExpireAfterOption); timeseries.Of(e.Meta()) != nil || !eas {
		return 0, false, modTimeseries(e, opts)
	}
	return clusteredExpiryMod(e, opts, now)
}

// indexMod is what collMod's index option changes.
type indexMod struct {
	ttl      any // new expireAfterSeconds, nil when absent
	hidden   *bool
	refresh  *bool // new refreshOnRead
	lru      any   // new lruLimit (an object, or "off"), nil when absent
	elements *bool // new expireElements
	warn     any   // new expiryWarningSeconds (a number, or "off"), nil when absent
	unique   *bool
	prepare  *bool // new prepareUnique
}

// parseIndexMod reads collMod's index option: the index (a name or a
// key pattern) and what changes.
func parseIndexMod(spec bson.D) (target any, mod indexMod, err error) {
	name, hasName := bsonutil.Field(spec, "name")
	key, hasKey := bsonutil.Field(spec, "keyPattern")
	switch {
	case hasName && hasKey:
		return nil, mod, mongoerr.New(mongoerr.InvalidOptions, "Cannot specify both key pattern and name.")
	case !hasName && !hasKey:
		return nil, mod, mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern.")
	}
	target = name
	if hasKey {
		target = key
	}
	mod.ttl, _ = bsonutil.Field(spec, "expireAfterSeconds")
	mod.lru, _ = bsonutil.Field(spec, catalog.LRULimitOption)
	mod.warn, _ = bsonutil.Field(spec, catalog.WarningOption)
	if mod.hidden, err = boolMod(spec, "hidden"); err != nil {
		return nil, mod, err
	}
	if mod.refresh, err = boolMod(spec, catalog.RefreshOnReadOption); err != nil {
		return nil, mod, err
	}
	if mod.elements, err = boolMod(spec, catalog.ExpireElementsOption); err != nil {
		return nil, mod, err
	}
	if mod.unique, err = boolMod(spec, "unique"); err != nil {
		return nil, mod, err
	}
	if mod.prepare, err = boolMod(spec, "prepareUnique"); err != nil {
		return nil, mod, err
	}
	if mod.ttl == nil && mod.hidden == nil && mod.refresh == nil && mod.lru == nil && mod.elements == nil && mod.warn == nil &&
		mod.unique == nil && mod.prepare == nil {
		return nil, mod, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds, hidden, unique, or prepareUnique field")
	}
	return target, mod, nil
}

// boolMod reads a bool of collMod's index option, nil when absent.
func boolMod(spec bson.D, field string) (*bool, error) {
	v, ok := bsonutil.Field(spec, field)
	if !ok {
		return nil, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return nil, mongoerr.WrongType("collMod", "index."+field, v, "bool")
	}
	return &b, nil
}

// ModIndex changes the options of the index that collMod's index option
// (spec) names; the reply has each option's old and new values. evict
// reports a new lruLimit, whose evictions follow the commit.
func ModIndex(ctx context.Context, e *docstore.CatalogEdit, spec bson.D) (reply bson.D, evict bool, err error) {
	target, mod, err := parseIndexMod(spec)
	if err != nil {
		return nil, false, err
	}
	ix, err := findIndexForMod(e.Meta(), target)
	if err != nil {
		return nil, false, err
	}
	err = e.ModifyIndex(ix.Name, func(ix *catalog.Index) error {
		reply, err = mod.apply(ctx, e, ix)
		return err
	})
	return reply, err == nil && mod.lru != nil, err
}

// apply makes the changes of mod to ix, in mongod's order, then Mayfly's
// own options.
func (mod indexMod) apply(ctx context.Context, e *docstore.CatalogEdit, ix *catalog.Index) (bson.D, error) {
	var steps []func() (bson.D, error)
	if mod.ttl != nil {
		steps = append(steps, func() (bson.D, error) { return applyTTLMod(ix, mod.ttl) })
	}
	if mod.unique != nil {
		steps = append(steps, func() (bson.D, error) { return applyUniqueMod(ctx, e, ix, *mod.unique) })
	}
	if mod.hidden != nil {
		steps = append(steps, func() (bson.D, error) { return applyHiddenMod(ix, *mod.hidden) })
	}
	if mod.prepare != nil {
		steps = append(steps, func() (bson.D, error) { return applyPrepareUniqueMod(ix, *mod.prepare) })
	}
	if mod.refresh != nil {
		steps = append(steps, func() (bson.D, error) { return applyRefreshMod(ix, *mod.refresh) })
	}
	if mod.lru != nil {
		steps = append(steps, func() (bson.D, error) { return applyLRUMod(ix, mod.lru) })
	}
	if mod.elements != nil {
		steps = append(steps, func() (bson.D, error) { return applyElementsMod(ix, *mod.elements) })
	}
	if mod.warn != nil {
		steps = append(steps, func() (bson.D, error) { return applyWarningMod(ix, mod.warn) })
	}
	var reply bson.D
	for _, step := range steps {
		r, err := step()
		if err != nil {
			return nil, err
		}
		reply = append(reply, r...)
	}
	return reply, nil
}

// findIndexForMod is the index collMod names, by name or key pattern:
// a ready one, as mongod's collMod finds.
func findIndexForMod(meta *catalog.Collection, target any) (*catalog.Index, error) {
	switch t := target.(type) {
	case string:
		if ix := meta.Index(t); ix != nil && ix.Ready && timeseries.Visible(ix) {
			return ix, nil
		}
		return nil, mongoerr.Newf(mongoerr.IndexNotFound, "cannot find index %s for ns %s", t, meta.Namespace())
	case bson.D:
		found := slices.DeleteFunc(IndexesByKey(meta, t), func(ix *catalog.Index) bool { return !ix.Ready })
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return nil, mongoerr.Newf(mongoerr.AmbiguousIndexKeyPattern, "index keyPattern %s matches %d indexes, must use index name. Conflicting indexes: %s, %s", bsonutil.Format(t), len(found), bsonutil.Format(found[0].Spec), bsonutil.Format(found[1].Spec))
		}
		return nil, mongoerr.Newf(mongoerr.IndexNotFound, "cannot find index %s for ns %s", bsonutil.Format(t), meta.Namespace())
	}
	return nil, mongoerr.Newf(mongoerr.TypeMismatch, "index name or key pattern has the wrong type %s", bsonutil.TypeName(target))
}

func applyTTLMod(ix *catalog.Index, v any) (bson.D, error) {
	if ix.IsID() {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "the _id field does not support TTL indexes")
	}
	if len(ix.Fields) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are single-field indexes, compound indexes do not support TTL")
	}
	secs, err := catalog.ValidateExpireAfterSeconds(v)
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, mongoerr.As(err).Msg)
	}
	var reply bson.D
	if ix.TTL {
		reply = append(reply, bson.E{Key: "expireAfterSeconds_old", Value: ix.ExpireAfter})
	}
	reply = append(reply, bson.E{Key: "expireAfterSeconds_new", Value: secs})
	ix.TTL, ix.ExpireAfter = true, secs
	ix.Spec = bsonutil.WithField(ix.Spec, "expireAfterSeconds", int32(secs))
	return reply, nil
}

func applyHiddenMod(ix *catalog.Index, hidden bool) (bson.D, error) {
	if ix.IsID() && hidden {
		return nil, mongoerr.New(mongoerr.BadValue, "can't hide _id index")
	}
	return flagMod(ix, "hidden", &ix.Hidden, hidden), nil
}

// applyRefreshMod turns refreshOnRead on or off; it answers as hidden
// does (the old and new values, nothing when unchanged).
func applyRefreshMod(ix *catalog.Index, refresh bool) (bson.D, error) {
	if refresh && !ix.TTL {
		return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the '%s' option requires a TTL index, and index %s has no expireAfterSeconds", catalog.RefreshOnReadOption, ix.Name)
	}
	return flagMod(ix, catalog.RefreshOnReadOption, &ix.RefreshOnRead, refresh), nil
}

// flagMod sets the index's bool option (flag, kept in its spec as key:
// true when on) and answers <key>_old and <key>_new, nothing when
// unchanged.
func flagMod(ix *catalog.Index, key string, flag *bool, on bool) bson.D {
	if *flag == on {
		return nil
	}
	reply := bson.D{{Key: key + "_old", Value: *flag}, {Key: key + "_new", Value: on}}
	*flag = on
	if on {
		ix.Spec = bsonutil.WithField(ix.Spec, key, true)
	} else {
		ix.Spec = bsonutil.WithoutField(ix.Spec, key)
	}
	return reply
}

// applyUniqueMod makes a prepared index unique, as mongod: only with
// prepareUnique set first (so that no new duplicate came in since), and
// only when it holds no duplicate key, else 359 listing them. A unique
// index is left as it is.
func applyUniqueMod(ctx context.Context, e *docstore.CatalogEdit, ix *catalog.Index, unique bool) (bson.D, error) {
	switch {
	case !unique:
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot make index non-unique")
	case ix.Unique:
		return nil, nil
	case !ix.PrepareUnique:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
	}
	dups, err := e.IndexDuplicates(ctx, ix.Name)
	if err != nil {
		return nil, err
	}
	if len(dups) > 0 {
		return nil, cannotConvertToUnique(dups)
	}
	ix.Unique = true
	ix.Spec = bsonutil.WithField(ix.Spec, "unique", true)
	return bson.D{{Key: "unique_new", Value: true}}, nil
}

// cannotConvertToUnique is mongod's error, with the _ids of each
// duplicate key's documents as its violations.
func cannotConvertToUnique(dups []bson.A) error {
	violations := make(bson.A, 0, len(dups))
	for _, ids := range dups {
		violations = append(violations, bson.D{{Key: "ids", Value: ids}})
	}
	err := mongoerr.New(mongoerr.CannotConvertIndexToUnique, "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.")
	err.Extra = []mongoerr.KV{{Key: "violations", Value: violations}}
	return err
}

// applyPrepareUniqueMod sets or clears prepareUnique; on a unique index,
// or to the value it has, it changes nothing, as mongod.
func applyPrepareUniqueMod(ix *catalog.Index, prepare bool) (bson.D, error) {
	if ix.Unique {
		return nil, nil
	}
	return flagMod(ix, "prepareUnique", &ix.PrepareUnique, prepare), nil
}
