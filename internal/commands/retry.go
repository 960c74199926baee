package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// Retryable writes on a replica set member: a write command's lsid,
// txnNumber and stmtIds, as internal/txnrules reads them. The records that make a
// retry answer the first attempt's result are internal/session's.

// retryableWrite returns the retry state of a write command, or nil when
// it is not a retryable write (standalone, or no txnNumber).
func (h *Handler) retryableWrite(r *request) (*session.Txn, error) {
	if h.deps.Repl == nil || r.txn != nil {
		return nil, nil // a transaction's statements commit with it
	}
	n, ok, err := txnrules.TxnNumber(r.args())
	if !ok || err != nil {
		return nil, err
	}
	ids, err := txnrules.StmtIDs(r.args())
	if err != nil {
		return nil, err
	}
	return session.Begin(session.Write{Engine: h.deps.Store.Engine(), LSID: n.LSID, Label: n.Label, Txn: n.Txn, StmtIDs: ids, Now: h.deps.Clock.Now,
		BeforeCommit: h.transactionalWriteCheck(r, n.Label, n.Txn), Migrated: h.deps.Migrations != nil})
}

// checkOutSession holds r's session until the command ends when r is a
// retryable write on a replica set member (session.Checkouts): a retry
// waits for an attempt still running here. It returns the release.
func (h *Handler) checkOutSession(r *request) (func(), error) {
	if h.deps.Repl == nil || r.txn != nil {
		return func() {}, nil
	}
	n, ok, err := txnrules.TxnNumber(r.args())
	if !ok || err != nil {
		return func() {}, nil // the command refuses a bad txnNumber itself
	}
	release, err := h.checkouts.CheckOut(r.ctx, n.LSID)
	if err != nil {
		return nil, checkInterrupt(r.ctx)
	}
	return release, nil
}

// withRetried adds retriedStmtIds to a write command's reply.
func withRetried(rt *session.Txn, reply bson.D) bson.D {
	if ids := rt.Retried(); len(ids) > 0 {
		return append(reply, bson.E{Key: "retriedStmtIds", Value: ids})
	}
	return reply
}

// refuseMulti refuses a multi-document statement in a retryable write, as
// mongod does.
func refuseMulti(rt *session.Txn) error {
	if rt == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Cannot use (or request) retryable writes with multi=true")
}

func asInt32(d bson.D, key string) int32 {
	v, _ := bsonutil.Field(d, key)
	n, _ := v.(int32)
	return n
}

// addPrior counts a retried update statement's recorded result.
func (w *writeResult) addPrior(i int, prior bson.D) {
	w.n += int64(asInt32(prior, "n"))
	w.nModified += int64(asInt32(prior, "nModified"))
	if id, ok := bsonutil.Field(prior, "upserted"); ok {
		w.upserted = append(w.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: id}})
	}
}
