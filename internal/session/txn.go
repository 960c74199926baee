package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Multi-document transactions' session state, as mongod's
// TransactionParticipant keeps it (docs/design/0015): per session the
// active txnNumber and its state, and the rules that answer a statement,
// commitTransaction or abortTransaction naming some txnNumber. The
// storage side of a transaction (its snapshot and writes) is a Resource
// this table holds and aborts; it never learns what is inside.

// DefaultTxnLifetime is mongod's transactionLifetimeLimitSeconds default.
const DefaultTxnLifetime = 60 * time.Second

// Resource is a transaction's storage side (docstore.Txn).
type Resource interface{ Abort() }

// TxnState is where a transaction is in its life.
type TxnState int

// The states of a transaction.
const (
	TxnInProgress TxnState = iota + 1
	TxnCommitted
	TxnAborted
	// TxnCommitUnknown: a commit failed in a way that leaves its outcome
	// unknown (its log entry may still apply).
	TxnCommitUnknown
)

func (s TxnState) String() string {
	switch s {
	case TxnInProgress:
		return "inProgress"
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	case TxnCommitUnknown:
		return "commitUnknown"
	}
	return "none"
}

// TxnStatement names the transaction a command belongs to.
type TxnStatement struct {
	// LSID is the session's lsid.id, followed by lsid.uid when present.
	LSID []byte
	// Label names the session in errors.
	Label  string
	Number int64
	// Start is startTransaction: true.
	Start bool
	// ReadConcern is the level the first statement gave ("" for local).
	ReadConcern string
	// Client is who runs the statement, for currentOp's idle sessions.
	Client TxnClient
	// ReadTimestamp is the cluster time of the snapshot a starting
	// statement opens (packed), for currentOp.
	ReadTimestamp uint64
}

// TxnClient is the connection that last ran a statement of a
// transaction, as currentOp shows an idle session's.
type TxnClient struct {
	Addr   string
	ConnID int64
	// LSID is the marshalled lsid document.
	LSID []byte
}

// Transaction is one session's current transaction.
type Transaction struct {
	Number      int64
	State       TxnState
	ReadConcern string
	Started     time.Time
	Label       string
	res         Resource
	running     int // statements inside now
	// interrupts stop the statements inside now (Attach); the reaper
	// calls them with ErrLifetimeExceeded.
	interrupts map[int64]func(error)
	nextStmt   int64
	// readTimestamp, client, activeSince and active are currentOp's
	// (Report).
	readTimestamp uint64
	client        TxnClient
	activeSince   time.Time
	active        time.Duration
}

// ErrLifetimeExceeded is the cause given to the statements running in a
// transaction the reaper aborts: they fail with
// TransactionExceededLifetimeLimitSeconds, as mongod's do.
var ErrLifetimeExceeded = errors.New("session: transaction exceeded transactionLifetimeLimitSeconds")

// Resource is the transaction's storage side.
func (t *Transaction) Resource() Resource { return t.res }

// TxnStats is serverStatus's transactions section.
type TxnStats struct {
	CurrentActive, CurrentInactive, CurrentOpen int64
	TotalStarted, TotalCommitted, TotalAborted  int64
}

// Transactions is the server's table of sessions' transactions.
type Transactions struct {
	clock    clock.Clock
	lifetime atomic.Int64 // transactionLifetimeLimitSeconds, as a Duration
	mu       sync.Mutex
	bySess   map[string]*Transaction
	stats    TxnStats
	wake     chan struct{}
}

// NewTransactions returns an empty table whose transactions live
// DefaultTxnLifetime.
func NewTransactions(clk clock.Clock) *Transactions {
	ts := &Transactions{clock: clk, bySess: map[string]*Transaction{}, wake: make(chan struct{}, 1)}
	ts.lifetime.Store(int64(DefaultTxnLifetime))
	return ts
}

// Lifetime is transactionLifetimeLimitSeconds.
func (ts *Transactions) Lifetime() time.Duration { return time.Duration(ts.lifetime.Load()) }

// SetLifetime changes transactionLifetimeLimitSeconds; the reaper
// applies it to open transactions at once.
func (ts *Transactions) SetLifetime(d time.Duration) {
	ts.lifetime.Store(int64(d))
	ts.notify()
}

// Enter runs the checks mongod runs before a statement of a transaction
// and returns the transaction, started with open when the statement
// starts one (a newer txnNumber aborts the session's older transaction).
// The caller calls Leave once the statement is over.
func (ts *Transactions) Enter(st TxnStatement, open func() Resource) (*Transaction, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	cur := ts.bySess[string(st.LSID)]
	if err := tooOld(st, cur); err != nil {
		return nil, err
	}
	if st.Start {
		if cur != nil && cur.Number == st.Number {
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Only servers in a sharded cluster can start a new transaction at the active transaction number")
		}
		ts.abortLocked(cur)
		cur = &Transaction{Number: st.Number, State: TxnInProgress, ReadConcern: st.ReadConcern, Started: ts.clock.Now(), Label: st.Label, res: open(), readTimestamp: st.ReadTimestamp}
		ts.bySess[string(st.LSID)] = cur
		ts.stats.TotalStarted++
		ts.notify()
	} else if err := continuable(st, cur); err != nil {
		return nil, err
	}
	ts.markActive(cur, st.Client)
	return cur, nil
}

// markActive counts a statement in: the transaction becomes active when
// the first one enters.
func (ts *Transactions) markActive(t *Transaction, client TxnClient) {
	if t.running == 0 {
		t.activeSince = ts.clock.Now()
	}
	t.running++
	t.client = client
}

// Attach registers interrupt to stop a statement running in t when the
// reaper aborts t; the statement calls detach once it is over.
func (ts *Transactions) Attach(t *Transaction, interrupt func(error)) (detach func()) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t.interrupts == nil {
		t.interrupts = map[int64]func(error){}
	}
	t.nextStmt++
	id := t.nextStmt
	t.interrupts[id] = interrupt
	return func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		delete(t.interrupts, id)
	}
}

// Leave ends a statement Enter let in.
func (ts *Transactions) Leave(t *Transaction) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.running--
	if t.running == 0 {
		t.active += ts.clock.Now().Sub(t.activeSince)
	}
}

// Fail aborts t after a statement failed: mongod aborts a transaction on
// any error of its statements.
func (ts *Transactions) Fail(t *Transaction) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.abortLocked(t)
}

// Commit runs commitTransaction: commit is called with the transaction's
// resource while it is in progress, and its outcome recorded (unknown
// when it reports so). A committed transaction answers ok again; an
// aborted one NoSuchTransaction. recorded reads the durable commit
// record (RecordCommit): it answers a retried commit this member did not
// run (the first attempt reached another primary) or whose outcome it
// did not see.
func (ts *Transactions) Commit(st TxnStatement, commit func(Resource) (unknown bool, err error), recorded func() (bool, error)) error {
	ts.mu.Lock()
	cur := ts.bySess[string(st.LSID)]
	if err := tooOld(st, cur); err != nil {
		ts.mu.Unlock()
		return err
	}
	if err := ts.settled(st, cur, recorded); err != errUnsettled {
		ts.mu.Unlock()
		return err
	}
	cur.running++
	ts.mu.Unlock()
	unknown, err := commit(cur.res)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	cur.running--
	switch {
	case err == nil:
		cur.State = TxnCommitted
		ts.stats.TotalCommitted++
	case unknown:
		cur.State = TxnCommitUnknown
	default:
		ts.abortLocked(cur)
	}
	return err
}

// errUnsettled says the transaction is in progress: its commit runs.
var errUnsettled = errors.New("session: transaction in progress")

// settled answers a commit of a transaction that is not in progress here.
func (ts *Transactions) settled(st TxnStatement, cur *Transaction, recorded func() (bool, error)) error {
	if cur == nil || cur.Number != st.Number || cur.State == TxnCommitUnknown {
		done, err := recorded()
		switch {
		case err != nil:
			return err
		case done && cur != nil && cur.Number == st.Number:
			cur.State = TxnCommitted
			ts.stats.TotalCommitted++
			return nil
		case done:
			return nil
		case cur != nil && cur.Number == st.Number:
			return unknownError(cur)
		}
		return matches(st, cur)
	}
	switch cur.State {
	case TxnCommitted:
		return nil
	case TxnAborted:
		return abortedError(cur)
	}
	return errUnsettled
}

// Abort runs abortTransaction.
func (ts *Transactions) Abort(st TxnStatement) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	cur := ts.bySess[string(st.LSID)]
	if err := tooOld(st, cur); err != nil {
		return err
	}
	if err := matches(st, cur); err != nil {
		return err
	}
	switch cur.State {
	case TxnCommitted:
		return committedError(cur)
	case TxnAborted:
		return abortedError(cur)
	}
	ts.abortLocked(cur)
	return nil
}

// tooOld refuses a txnNumber older than the session's active one.
func tooOld(st TxnStatement, cur *Transaction) error {
	if cur == nil || st.Number >= cur.Number {
		return nil
	}
	return mongoerr.Newf(mongoerr.TransactionTooOld,
		"Cannot start transaction with { txnNumber: %d } on session %s because a newer transaction with txnNumberAndRetryCounter { txnNumber: %d, txnRetryCounter: 0 } has already started on this session.",
		st.Number, st.Label, cur.Number)
}

// matches refuses a txnNumber that is not the session's active one.
func matches(st TxnStatement, cur *Transaction) error {
	if cur != nil && cur.Number == st.Number {
		return nil
	}
	active := int64(-1)
	if cur != nil {
		active = cur.Number
	}
	return mongoerr.Newf(mongoerr.NoSuchTransaction,
		"Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", st.Number, active)
}

// continuable refuses a statement of a transaction that is not in
// progress.
func continuable(st TxnStatement, cur *Transaction) error {
	if err := matches(st, cur); err != nil {
		return err
	}
	switch cur.State {
	case TxnCommitted, TxnCommitUnknown:
		return committedError(cur)
	case TxnAborted:
		return abortedError(cur)
	}
	return nil
}

func committedError(t *Transaction) error {
	return mongoerr.Newf(mongoerr.TransactionCommitted, "Transaction with { txnNumber: %d } has been committed.", t.Number)
}

// unknownError answers a retried commit whose first attempt's entry was
// proposed and not seen applied: still unknown, with a retriable code
// (the reply's label says UnknownTransactionCommitResult).
func unknownError(t *Transaction) error {
	return mongoerr.Newf(mongoerr.InterruptedDueToReplStateChange, "Transaction with { txnNumber: %d }: the outcome of its commit is unknown", t.Number)
}

func abortedError(t *Transaction) error {
	return mongoerr.Newf(mongoerr.NoSuchTransaction, "Transaction with { txnNumber: %d } has been aborted.", t.Number)
}

func (ts *Transactions) abortLocked(t *Transaction) {
	if t == nil || t.State != TxnInProgress {
		return
	}
	t.State = TxnAborted
	t.res.Abort()
	ts.stats.TotalAborted++
}

// Stats returns serverStatus's figures.
func (ts *Transactions) Stats() TxnStats {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.stats
	for _, t := range ts.bySess {
		if t.State != TxnInProgress {
			continue
		}
		s.CurrentOpen++
		if t.running > 0 {
			s.CurrentActive++
		} else {
			s.CurrentInactive++
		}
	}
	return s
}

// AbortAll aborts every transaction in progress (a step-down).
func (ts *Transactions) AbortAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.bySess {
		ts.abortLocked(t)
	}
}

// Reap aborts the transactions that have outlived the lifetime limit at
// now, and forgets finished ones whose session has been idle past
// Lifetime. It returns when the next in-progress transaction expires.
func (ts *Transactions) Reap(now time.Time) (next time.Time, any bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	limit := ts.Lifetime()
	for key, t := range ts.bySess {
		deadline := t.Started.Add(limit)
		switch {
		case t.State == TxnInProgress && !now.Before(deadline):
			ts.abortLocked(t)
			for _, interrupt := range t.interrupts {
				interrupt(ErrLifetimeExceeded)
			}
		case t.State == TxnInProgress:
			if !any || deadline.Before(next) {
				next, any = deadline, true
			}
		case now.Sub(t.Started) > Lifetime:
			delete(ts.bySess, key)
		}
	}
	return next, any
}

// Run aborts expired transactions until ctx ends, waking at the next
// deadline (or a lifetime later when none is open, or when one starts).
func (ts *Transactions) Run(ctx context.Context) {
	timer := ts.clock.NewTimer(ts.Lifetime())
	defer timer.Stop()
	for {
		next, ok := ts.Reap(ts.clock.Now())
		wait := ts.Lifetime()
		if ok {
			wait = max(next.Sub(ts.clock.Now()), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-ts.wake:
		}
	}
}

func (ts *Transactions) notify() {
	select {
	case ts.wake <- struct{}{}:
	default:
	}
}

// String describes t for logs; no session secrets are in it.
func (t *Transaction) String() string {
	return fmt.Sprintf("txnNumber %d %s", t.Number, t.State)
}
