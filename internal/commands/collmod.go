package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/ddl"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
)

// collMod: the options are read, checked and applied by internal/ddl on
// one edit of the catalog entry, committed with the modify event, as
// mongod's one oplog entry: all of the command or none of it.

func cmdCollMod(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	opts := commandOptions(r)
	if err := ddl.CheckCollModOptions(opts); err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		return nil, nsNotFound(r.db, name)
	}
	if executor.IsView(c.Meta()) {
		authEnabled := h.deps.Auth != nil && h.deps.Auth.Enabled()
		return bson.D{}, ddl.ModView(h.deps.Store, c, opts, authEnabled)
	}
	if err := ddl.ViewModOnCollection(opts); err != nil {
		return nil, err
	}
	reply, evict, err := collModCommit(h, c, r, opts)
	if err == nil && evict {
		// A lowered lruLimit holds at once: the evictions commit before
		// the reply, as one write of their own after the change.
		err = c.EvictToLRULimits()
	}
	return reply, err
}

// commandOptions are the command's fields after its name, less the
// generic ones, in the command's order.
func commandOptions(r *request) bson.D {
	opts := bson.D{}
	for _, e := range r.body[1:] {
		if !cmdargs.IsGeneric(e.Key) {
			opts = append(opts, e)
		}
	}
	return opts
}

// collModCommit makes collMod's changes on one edit of the catalog entry
// and commits them with the modify event. evict reports a changed
// lruLimit.
func collModCommit(h *Handler, c *docstore.Collection, r *request, opts bson.D) (reply bson.D, evict bool, err error) {
	e := c.Edit()
	defer e.Close()
	reply, evict, err = collModApply(h, e, r, opts)
	if err != nil {
		return nil, false, interruptionOr(r.ctx, err)
	}
	return reply, evict, e.Commit(ddl.ModEvent(e, opts))
}

// collModApply makes collMod's changes on the edit, in mongod's order:
// the whole request is read before a clustered expiry is set.
func collModApply(h *Handler, e *docstore.CatalogEdit, r *request, opts bson.D) (bson.D, bool, error) {
	expiry, setExpiry, err := ddl.ModExpiry(e, opts, h.deps.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	if err := ddl.ModValidation(e, opts); err != nil {
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
	return ddl.ModIndex(r.ctx, e, spec)
}
