package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// tailOptions reads find's tailable and awaitData and checks them as
// mongod does.
func tailOptions(r *request, a *findArgs) (tailable, await bool, err error) {
	if tailable, err = optBool(r, "tailable"); err != nil {
		return false, false, err
	}
	if await, err = optBool(r, "awaitData"); err != nil {
		return false, false, err
	}
	switch {
	case await && !tailable:
		return false, false, mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	case tailable && a.sort != nil && !a.sort.IsEmpty():
		return false, false, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
	case tailable && a.singleBatch:
		return false, false, mongoerr.New(mongoerr.FailedToParse, "cannot use tailable option with the 'singleBatch' option")
	}
	return tailable, await, nil
}

// findTailable starts a tailable cursor (paging.Tail).
func (h *Handler) findTailable(r *request, a *findArgs, c *docstore.Collection, await bool) (bson.D, error) {
	if !c.Meta().Capped {
		return nil, mongoerr.Newf(mongoerr.BadValue, "error processing query: ns=%s.%s tailable cursor requested on non capped collection", r.db, a.coll)
	}
	src := paging.Tail(h.deps.Store, r.db, a.coll, a.filter, await)
	if a.projection != nil {
		src = paging.Project(src, projector(a.projection, a.filter, false))
	}
	return h.requestCursorReply(r, r.db+"."+a.coll, src, a.batchSize, false)
}
