package commands

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// create and createIndexes inside a transaction (docs/design/0015), and
// the implicit creation by an insert or upsert: the collection and its
// indexes are the transaction's until it commits (docstore/txnddl.go).
// Every statement finds its collections through collectionIn, so that
// the transaction's own creations are seen by its later statements.

// collectionIn is db.name as seen by x (nil: outside a transaction).
func collectionIn(store *docstore.Store, x *docstore.Txn, db, name string) *docstore.Collection {
	if x != nil {
		return x.Collection(db, name)
	}
	return store.Collection(db, name)
}

// collection is db.name as the request sees it.
func (h *Handler) collection(r *request, db, name string) *docstore.Collection {
	return collectionIn(h.deps.Store, r.storeTxn(), db, name)
}

// getOrCreate is db.name for a write, created when missing: by the
// request's transaction when it is a statement of one.
func (h *Handler) getOrCreate(r *request, db, name string) (*docstore.Collection, bool, error) {
	if x := r.storeTxn(); x != nil {
		return x.GetOrCreate(db, name)
	}
	return h.deps.Store.GetOrCreate(db, name)
}

// ddlReadConcerns are the transaction read concern levels under which
// mongod runs create and createIndexes ("" is local, the default).
var ddlReadConcerns = []string{"", "local"}

// refuseDDLReadConcern refuses create and createIndexes in a transaction
// whose read concern is not local, as mongod's commands support no other.
func refuseDDLReadConcern(r *request) error {
	if r.txn == nil || r.txn.state == nil || slices.Contains(ddlReadConcerns, r.txn.state.ReadConcern) {
		return nil
	}
	return readConcernNotSupported(r.name, bson.D{{Key: "level", Value: r.txn.state.ReadConcern}})
}

// refuseCreateInTransaction refuses what mongod's createCollection will
// not create inside a transaction: views, time-series collections and
// system collections.
func refuseCreateInTransaction(r *request, name string) error {
	if r.txn == nil {
		return nil
	}
	if _, ok := bsonutil.Field(r.body, "viewOn"); ok {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create a view in a multi-document transaction.")
	}
	if _, ok := bsonutil.Field(r.body, "timeseries"); ok {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create a time-series collection in a multi-document transaction.")
	}
	if strings.HasPrefix(name, "system.") {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot create system collection %s.%s within a transaction.", r.db, name)
	}
	return nil
}

// refuseSystemIndexesInTransaction refuses createIndexes on a system
// collection inside a transaction, with mongod's text.
func refuseSystemIndexesInTransaction(r *request, name string) error {
	if r.txn != nil && strings.HasPrefix(name, "system.") {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot write to system collection %s.%s within a transaction.", r.db, name)
	}
	return nil
}

// createCollection creates db.name for the create command: in the
// request's transaction when it is a statement of one.
func (h *Handler) createCollection(r *request, name string, opt docstore.CreateOptions) error {
	var err error
	if x := r.storeTxn(); x != nil {
		_, err = x.CreateCollection(r.db, name, opt)
	} else {
		_, err = h.deps.Store.CreateCollection(r.db, name, opt)
	}
	return err
}

// createIndexesIn builds ixs on c, which created says the command made:
// inside a transaction by mongod's rules there (docstore.Txn.CreateIndexes),
// where new indexes always go on a collection new to the transaction, so
// the reply says it was created automatically, as mongod's does.
func (h *Handler) createIndexesIn(r *request, c *docstore.Collection, ixs []*catalog.Index, created bool) (bson.D, error) {
	x := r.storeTxn()
	if x == nil {
		build := h.builds.Watch(r.ctx, r.opID, c.Namespace(), c.Meta().Name)
		res, err := c.CreateIndexesWatched(r.ctx, ixs, build.Hooks())
		build.End()
		if err != nil {
			return nil, interruptionOr(r.ctx, err)
		}
		return createIndexesReply(res, created), nil
	}
	res, err := x.CreateIndexes(c, ixs)
	if err != nil {
		return nil, err
	}
	return createIndexesReply(res, created || !res.AllExisted), nil
}
