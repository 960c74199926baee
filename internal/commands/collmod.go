package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

func cmdCollMod(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	for _, e := range r.body[1:] {
		if !genericFields[e.Key] && !contains(collModKnown, e.Key) && !isValidationOption(e.Key) {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the collMod option '%s' is not supported by Mayfly", e.Key)
		}
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		return nil, nsNotFound(r.db, name)
	}
	if isView(c.Meta()) {
		return collModView(h, c, r)
	}
	if err := viewModOnCollection(r); err != nil {
		return nil, err
	}
	reply, evict, err := collModCommit(h, c, r)
	if err == nil && evict {
		// A lowered lruLimit holds at once: the evictions commit before
		// the reply, as one write of their own after the change.
		err = c.EvictToLRULimits()
	}
	return reply, err
}

// collModCommit makes collMod's changes on one edit of the catalog entry
// and commits them with the modify event, as mongod's one oplog entry:
// all of the command or none of it, with its event. evict reports a
// changed lruLimit.
func collModCommit(h *Handler, c *docstore.Collection, r *request) (reply bson.D, evict bool, err error) {
	e := c.Edit()
	defer e.Close()
	reply, evict, err = collModApply(h, e, r)
	if err != nil {
		return nil, false, err
	}
	return reply, evict, e.Commit(collModEvent(e, r))
}

// collModApply makes collMod's changes on the edit.
func collModApply(h *Handler, e *docstore.CatalogEdit, r *request) (bson.D, bool, error) {
	expiry, setExpiry, err := collModExpiry(e, r, h.deps.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	if err := collModValidation(e, r); err != nil {
		return nil, false, err
	}
	if err := collModPreImages(e, r); err != nil {
		return nil, false, err
	}
	if setExpiry {
		if err := e.SetClusteredExpiry(expiry); err != nil {
			return nil, false, err
		}
	}
	spec, err := optDoc(r, "index")
	if err != nil || spec == nil {
		return bson.D{}, false, err
	}
	return collModIndex(e, spec)
}

// collModKnown are collMod's options besides validation's.
var collModKnown = []string{"index", preImagesOption, catalog.ExpireAfterOption, "timeseries", "viewOn", "pipeline"}

// collModExpiry applies a time-series collection's expireAfterSeconds and
// granularity at once; on another collection it checks a clustered
// collection's expireAfterSeconds, which the caller sets once the rest
// of the command is known good (set).
func collModExpiry(e *docstore.CatalogEdit, r *request, now time.Time) (secs int64, set bool, err error) {
	if _, eas := bsonutil.Field(r.body, catalog.ExpireAfterOption); timeseries.Of(e.Meta()) != nil || !eas {
		return 0, false, collModTimeseries(e, r)
	}
	return clusteredExpiryMod(e, r, now)
}

type indexMod struct {
	ttl      any // new expireAfterSeconds, nil when absent
	hidden   *bool
	refresh  *bool // new refreshOnRead
	lru      any   // new lruLimit (an object, or "off"), nil when absent
	elements *bool // new expireElements
	warn     any   // new expiryWarningSeconds (a number, or "off"), nil when absent
}

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
	if v, ok := bsonutil.Field(spec, "hidden"); ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, mod, wrongType("collMod", "index.hidden", v, "bool")
		}
		mod.hidden = &b
	}
	if v, ok := bsonutil.Field(spec, catalog.RefreshOnReadOption); ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, mod, wrongType("collMod", "index."+catalog.RefreshOnReadOption, v, "bool")
		}
		mod.refresh = &b
	}
	mod.lru, _ = bsonutil.Field(spec, catalog.LRULimitOption)
	mod.warn, _ = bsonutil.Field(spec, catalog.WarningOption)
	if v, ok := bsonutil.Field(spec, catalog.ExpireElementsOption); ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, mod, wrongType("collMod", "index."+catalog.ExpireElementsOption, v, "bool")
		}
		mod.elements = &b
	}
	if _, unique := bsonutil.Field(spec, "unique"); unique {
		return nil, mod, mongoerr.New(mongoerr.InvalidOptions, "the collMod index option 'unique' is not supported by Mayfly")
	}
	if mod.ttl == nil && mod.hidden == nil && mod.refresh == nil && mod.lru == nil && mod.elements == nil && mod.warn == nil {
		return nil, mod, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds, hidden, unique, or prepareUnique field")
	}
	return target, mod, nil
}

// collModIndex changes an index's options; evict reports a new
// lruLimit, whose evictions follow the commit.
func collModIndex(e *docstore.CatalogEdit, spec bson.D) (reply bson.D, evict bool, err error) {
	target, mod, err := parseIndexMod(spec)
	if err != nil {
		return nil, false, err
	}
	ix, err := findIndexForMod(e.Meta(), target)
	if err != nil {
		return nil, false, err
	}
	err = e.ModifyIndex(ix.Name, func(ix *catalog.Index) error {
		reply = nil
		if mod.ttl != nil {
			r, err := applyTTLMod(ix, mod.ttl)
			if err != nil {
				return err
			}
			reply = append(reply, r...)
		}
		if mod.hidden != nil {
			r, err := applyHiddenMod(ix, *mod.hidden)
			if err != nil {
				return err
			}
			reply = append(reply, r...)
		}
		if mod.refresh != nil {
			r, err := applyRefreshMod(ix, *mod.refresh)
			if err != nil {
				return err
			}
			reply = append(reply, r...)
		}
		r, err := applyMayflyMods(ix, mod)
		reply = append(reply, r...)
		return err
	})
	return reply, err == nil && mod.lru != nil, err
}

// applyMayflyMods applies the lruLimit and expireElements changes of mod.
func applyMayflyMods(ix *catalog.Index, mod indexMod) (bson.D, error) {
	var reply bson.D
	if mod.lru != nil {
		r, err := applyLRUMod(ix, mod.lru)
		if err != nil {
			return nil, err
		}
		reply = append(reply, r...)
	}
	if mod.elements != nil {
		r, err := applyElementsMod(ix, *mod.elements)
		if err != nil {
			return nil, err
		}
		reply = append(reply, r...)
	}
	if mod.warn != nil {
		r, err := applyWarningMod(ix, mod.warn)
		if err != nil {
			return nil, err
		}
		reply = append(reply, r...)
	}
	return reply, nil
}

func findIndexForMod(meta *catalog.Collection, target any) (*catalog.Index, error) {
	switch t := target.(type) {
	case string:
		if ix := meta.Index(t); ix != nil && timeseries.Visible(ix) {
			return ix, nil
		}
		return nil, mongoerr.Newf(mongoerr.IndexNotFound, "cannot find index %s for ns %s", t, meta.Namespace())
	case bson.D:
		var found []*catalog.Index
		for i := range meta.Indexes {
			if timeseries.Visible(&meta.Indexes[i]) && bsonutil.Compare(meta.Indexes[i].KeyPattern(), t) == 0 {
				found = append(found, &meta.Indexes[i])
			}
		}
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
	if ix.Hidden == hidden {
		return nil, nil
	}
	reply := bson.D{{Key: "hidden_old", Value: ix.Hidden}, {Key: "hidden_new", Value: hidden}}
	ix.Hidden = hidden
	if hidden {
		ix.Spec = bsonutil.WithField(ix.Spec, "hidden", true)
	} else {
		ix.Spec = bsonutil.WithoutField(ix.Spec, "hidden")
	}
	return reply, nil
}

// applyRefreshMod turns refreshOnRead on or off; it answers as hidden
// does (the old and new values, nothing when unchanged).
func applyRefreshMod(ix *catalog.Index, refresh bool) (bson.D, error) {
	if refresh && !ix.TTL {
		return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the '%s' option requires a TTL index, and index %s has no expireAfterSeconds", catalog.RefreshOnReadOption, ix.Name)
	}
	if ix.RefreshOnRead == refresh {
		return nil, nil
	}
	reply := bson.D{{Key: "refreshOnRead_old", Value: ix.RefreshOnRead}, {Key: "refreshOnRead_new", Value: refresh}}
	ix.RefreshOnRead = refresh
	if refresh {
		ix.Spec = bsonutil.WithField(ix.Spec, catalog.RefreshOnReadOption, true)
	} else {
		ix.Spec = bsonutil.WithoutField(ix.Spec, catalog.RefreshOnReadOption)
	}
	return reply, nil
}
