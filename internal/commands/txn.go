package commands

import (
	"context"
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/session"
)

// Multi-document transactions (docs/design/0015): a command with
// autocommit: false is a statement of its session's transaction. The
// session's state is session.Transactions'; the transaction's reads and
// writes go through its docstore.Txn (request.txn), which writeOp,
// parseWriteArgs and the executor hand down.

// transactionCommands are the commands mongod runs inside a transaction
// (besides count, refused with its own message); the others are refused
// with OperationNotSupportedInTransaction.
var transactionCommands = []string{
	"find", "getMore", "killCursors", "aggregate", "distinct",
	"insert", "update", "delete", "findAndModify", "bulkWrite",
	"create", "createIndexes",
	"commitTransaction", "abortTransaction",
}

// TransactionCommands are the commands run inside a transaction, for
// tests that must cover each of them.
func TransactionCommands() []string { return slices.Clone(transactionCommands) }

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

// isTransactionStatement reports whether the command carries
// autocommit, which only a transaction's statements do.
func isTransactionStatement(r *request) bool {
	_, ok := bsonutil.Field(r.body, "autocommit")
	return ok
}

// enterTransaction checks a transaction statement as mongod does and
// starts or continues its transaction.
func (h *Handler) enterTransaction(r *request) error {
	if !isTransactionStatement(r) {
		return nil
	}
	stmt, err := transactionStatement(r)
	if err != nil {
		return err
	}
	if err := allowedInTransaction(r.name); err != nil {
		return err
	}
	if err := pipelineInTransaction(r); err != nil {
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
		err = firstWriteError(reply)
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

// firstWriteError is the first of a write reply's writeErrors.
func firstWriteError(reply bson.D) error {
	v, _ := bsonutil.Field(reply, "writeErrors")
	errs, _ := v.(bson.A)
	if len(errs) == 0 {
		return nil
	}
	first, _ := errs[0].(bson.D)
	code, _ := bsonutil.Field(first, "code")
	msg, _ := bsonutil.Field(first, "errmsg")
	c, _ := code.(int32)
	s, _ := msg.(string)
	return mongoerr.New(mongoerr.Code(c), s)
}

func lsidDoc(r *request) bson.D {
	v, _ := bsonutil.Field(r.body, "lsid")
	d, _ := v.(bson.D)
	return d
}

// transactionStatement reads autocommit, txnNumber, startTransaction and
// the read concern of a statement.
func transactionStatement(r *request) (session.TxnStatement, error) {
	var st session.TxnStatement
	if v, _ := bsonutil.Field(r.body, "autocommit"); v != false {
		return st, mongoerr.New(mongoerr.InvalidOptions, "autocommit must be false")
	}
	number, lsid, label, ok, err := sessionTxnNumber(r)
	if err != nil {
		return st, err
	}
	if !ok {
		return st, mongoerr.New(mongoerr.InvalidOptions, "txnNumber must be provided for multi-document transactions")
	}
	st = session.TxnStatement{LSID: lsid, Label: label, Number: number}
	if start, ok := bsonutil.Field(r.body, "startTransaction"); ok {
		if start != true {
			return st, mongoerr.New(mongoerr.InvalidOptions, "startTransaction must be true")
		}
		st.Start = true
	}
	st.ReadConcern, err = transactionReadConcern(r, st.Start)
	return st, err
}

// transactionReadConcern is the read concern level a statement gives:
// only the first may give one, and only local, majority or snapshot.
func transactionReadConcern(r *request, start bool) (string, error) {
	d, err := optDoc(r, "readConcern")
	if err != nil || d == nil {
		return "", err
	}
	if !start {
		return "", mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	level, _ := bsonutil.Field(d, "level")
	switch level {
	case nil, "local", "majority", "snapshot":
		s, _ := level.(string)
		return s, nil
	}
	return "", mongoerr.New(mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
}

// allowedInTransaction refuses the commands mongod refuses inside a
// transaction.
func allowedInTransaction(name string) error {
	if slices.Contains(transactionCommands, name) {
		return nil
	}
	if name == "count" {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run 'count' in a multi-document transaction. Please see http://dochub.mongodb.org/core/transaction-count for a recommended alternative.")
	}
	return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", name)
}

// stagesOutsideTransactions are the aggregation stages mongod refuses
// inside a transaction: they write, or read beyond one snapshot.
var stagesOutsideTransactions = []string{"$out", "$merge", "$changeStream"}

// pipelineInTransaction refuses an aggregate whose pipeline holds one of
// them, with the text of mongod's check before the pipeline is parsed.
func pipelineInTransaction(r *request) error {
	if r.name != "aggregate" {
		return nil
	}
	v, _ := bsonutil.Field(r.body, "pipeline")
	stages, _ := v.(bson.A)
	for _, s := range stages {
		d, _ := s.(bson.D)
		if len(d) > 0 && slices.Contains(stagesOutsideTransactions, d[0].Key) {
			return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Stage not supported inside of a multi-document transaction: %s", d[0].Key)
		}
	}
	return nil
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
		return commitOutcomeUnknown(err), err
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

// commitOutcomeUnknown reports whether a failed commit may still have
// committed: its entry was proposed and its fate was not seen (lost
// leadership, a timeout). A conflict or a refusal before proposing is
// certain.
func commitOutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return false
	}
	return !errors.Is(err, repl.ErrNotPrimary)
}

// transactionsStatus is serverStatus's transactions section.
func (h *Handler) transactionsStatus() bson.D {
	s := h.txns.Stats()
	return bson.D{
		{Key: "currentActive", Value: s.CurrentActive},
		{Key: "currentInactive", Value: s.CurrentInactive},
		{Key: "currentOpen", Value: s.CurrentOpen},
		{Key: "totalAborted", Value: s.TotalAborted},
		{Key: "totalCommitted", Value: s.TotalCommitted},
		{Key: "totalStarted", Value: s.TotalStarted},
	}
}
