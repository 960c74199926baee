package commands

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// Multi-document transactions (docs/design/0015): a command with
// autocommit: false is a statement of its session's transaction. The
// session's state is session.Transactions'; the statement's rules are
// internal/txnrules'; the transaction's reads and writes go through its
// docstore.Txn (request.txn), which writeOp, parseWriteArgs and the
// executor hand down.

// inTransaction is a request's transaction, when it is a statement of one.
type inTransaction struct {
	state *session.Transaction
	store *docstore.Txn
	stmt  session.TxnStatement
	// detach ends the reaper's hold on the statement (Attach).
	detach func()
}

// storeTxn is the docstore transaction a request's reads and writes go
// through: its transaction's, or a snapshot read's (reads only); nil
// for others.
func (r *request) storeTxn() *docstore.Txn {
	if r.txn == nil {
		return r.snapshot.reader()
	}
	return r.txn.store
}

// enterTransaction checks a transaction statement as mongod does and
// starts or continues its transaction.
func (h *Handler) enterTransaction(r *request) error {
	if !txnrules.IsStatement(r.body) {
		return nil
	}
	stmt, err := txnrules.Statement(r.args())
	if err != nil {
		return err
	}
	if err := h.deps.Repl.CheckWrite(); err != nil {
		return mongoerr.New(mongoerr.NotWritablePrimary, "Not primary so we cannot begin or continue a transaction")
	}
	if r.name == "commitTransaction" || r.name == "abortTransaction" {
		r.txn = &inTransaction{stmt: stmt}
		return nil
	}
	stmt.Client = session.TxnClient{Addr: r.conn.RemoteAddr(), ConnID: r.conn.ID()}
	stmt.Client.LSID, _ = bsonutil.Marshal(lsidDoc(r))
	stmt.ReadTimestamp = h.appliedTime()
	state, err := h.txns.Enter(stmt, func() session.Resource {
		x := h.deps.Store.BeginTxn()
		if lsid, err := bsonutil.Marshal(lsidDoc(r)); err == nil {
			x.SetSession(lsid, stmt.Number)
		}
		return x
	})
	if err != nil {
		return err
	}
	r.txn = &inTransaction{state: state, store: state.Resource().(*docstore.Txn), stmt: stmt}
	r.txn.detach = h.interruptOnExpiry(r, state)
	h.showTransaction(r, state)
	return nil
}

// interruptOnExpiry lets the reaper stop r when it aborts r's
// transaction, so that r fails with TransactionExceededLifetimeLimitSeconds
// as mongod's statement does, and returns the func that releases r.
func (h *Handler) interruptOnExpiry(r *request, state *session.Transaction) (detach func()) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	r.ctx = ctx
	release := h.txns.Attach(state, cancel)
	return func() {
		release()
		cancel(nil)
	}
}

// expiredDuring is the error of a statement that ran while the reaper
// aborted its transaction, even if the statement did not stop for it.
func expiredDuring(r *request) error {
	if errors.Is(context.Cause(r.ctx), session.ErrLifetimeExceeded) {
		return interruptCause(r.ctx)
	}
	return nil
}

// leaveTransaction ends a statement. One that failed, or whose write
// failed, aborts its transaction, as mongod's do; a transient write
// error (a write conflict) is the command's error, as mongod throws it
// rather than report it in writeErrors.
func (h *Handler) leaveTransaction(r *request, reply bson.D, err error) (bson.D, error) {
	if r.txn == nil || r.txn.state == nil {
		return reply, err
	}
	h.txns.Leave(r.txn.state)
	if expired := expiredDuring(r); expired != nil {
		r.txn.detach()
		return nil, expired
	}
	r.txn.detach()
	if err == nil {
		err = txnrules.FirstWriteError(reply)
		if err == nil {
			return reply, nil
		}
		if mongoerr.As(err).Code != mongoerr.WriteConflict {
			h.txns.Fail(r.txn.state)
			return reply, nil
		}
		reply = nil
	}
	h.txns.Fail(r.txn.state)
	return reply, err
}

func lsidDoc(r *request) bson.D {
	v, _ := bsonutil.Field(r.body, "lsid")
	d, _ := v.(bson.D)
	return d
}

// cmdCommitTransaction commits the session's transaction, or answers a
// retried commit from its recorded outcome.
func cmdCommitTransaction(h *Handler, r *request) (bson.D, error) {
	if r.txn == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "commitTransaction must be run within a transaction")
	}
	st := r.txn.stmt
	err := h.txns.Commit(st, func(res session.Resource) (bool, error) {
		err := res.(*docstore.Txn).Commit(docstore.WriteOptions{Extra: session.RecordCommit(st.LSID, st.Number, h.deps.Clock.Now())})
		return txnrules.CommitOutcomeUnknown(err), err
	}, func() (bool, error) { return session.CommittedTxn(h.deps.Store.Engine(), st.LSID, st.Number) })
	if err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

// cmdAbortTransaction aborts the session's transaction.
func cmdAbortTransaction(h *Handler, r *request) (bson.D, error) {
	if r.txn == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "abortTransaction must be run within a transaction")
	}
	if err := h.txns.Abort(r.txn.stmt); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}
