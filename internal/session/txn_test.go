package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

type fakeResource struct{ aborted int }

func (f *fakeResource) Abort() { f.aborted++ }

var txnT0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func noRecord() (bool, error) { return false, nil }

func newTable(clk clock.Clock) *Transactions {
	return NewTransactions(clk)
}

func stmt(n int64, start bool) TxnStatement {
	return TxnStatement{LSID: []byte("s1"), Label: "s1", Number: n, Start: start}
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	return mongoerr.As(err).Code
}

// The session's transaction in each state, then each command naming an
// older, the same or a newer txnNumber: mongod 8.0's answers
// (finished_transaction_error_handling.js, transaction_participant.cpp).
func TestTransactionStateMachine(t *testing.T) {
	type setup func(ts *Transactions)
	start := func(ts *Transactions) {
		tx, err := ts.Enter(stmt(5, true), func() Resource { return &fakeResource{} })
		if err != nil {
			panic(err)
		}
		ts.Leave(tx)
	}
	states := map[TxnState]setup{
		TxnInProgress: start,
		TxnCommitted: func(ts *Transactions) {
			start(ts)
			_ = ts.Commit(stmt(5, false), func(Resource) (bool, error) { return false, nil }, noRecord)
		},
		TxnAborted: func(ts *Transactions) {
			start(ts)
			_ = ts.Abort(stmt(5, false))
		},
		TxnCommitUnknown: func(ts *Transactions) {
			start(ts)
			_ = ts.Commit(stmt(5, false), func(Resource) (bool, error) {
				return true, mongoerr.New(mongoerr.HostUnreachable, "lost")
			}, noRecord)
		},
	}
	type op int
	const (
		opStart op = iota
		opContinue
		opCommit
		opAbort
	)
	cases := []struct {
		state TxnState
		op    op
		n     int64
		want  mongoerr.Code
	}{
		{TxnInProgress, opContinue, 5, 0},
		{TxnInProgress, opCommit, 5, 0},
		{TxnInProgress, opAbort, 5, 0},
		{TxnInProgress, opStart, 5, mongoerr.ConflictingOperationInProgress},
		{TxnInProgress, opStart, 6, 0},
		{TxnInProgress, opContinue, 4, mongoerr.TransactionTooOld},
		{TxnInProgress, opContinue, 6, mongoerr.NoSuchTransaction},
		{TxnInProgress, opCommit, 6, mongoerr.NoSuchTransaction},
		{TxnInProgress, opAbort, 4, mongoerr.TransactionTooOld},
		{TxnCommitted, opCommit, 5, 0},
		{TxnCommitted, opAbort, 5, mongoerr.TransactionCommitted},
		{TxnCommitted, opContinue, 5, mongoerr.TransactionCommitted},
		{TxnCommitted, opStart, 5, mongoerr.ConflictingOperationInProgress},
		{TxnCommitted, opStart, 6, 0},
		{TxnAborted, opCommit, 5, mongoerr.NoSuchTransaction},
		{TxnAborted, opAbort, 5, mongoerr.NoSuchTransaction},
		{TxnAborted, opContinue, 5, mongoerr.NoSuchTransaction},
		{TxnAborted, opStart, 5, mongoerr.ConflictingOperationInProgress},
		{TxnAborted, opStart, 6, 0},
		{TxnCommitUnknown, opContinue, 5, mongoerr.TransactionCommitted},
		{TxnCommitUnknown, opCommit, 5, mongoerr.InterruptedDueToReplStateChange},
		{TxnCommitUnknown, opStart, 6, 0},
	}
	covered := map[TxnState]bool{}
	for _, tc := range cases {
		covered[tc.state] = true
		ts := newTable(clock.NewManual(txnT0))
		states[tc.state](ts)
		var err error
		switch tc.op {
		case opStart, opContinue:
			var tx *Transaction
			tx, err = ts.Enter(stmt(tc.n, tc.op == opStart), func() Resource { return &fakeResource{} })
			if err == nil {
				ts.Leave(tx)
			}
		case opCommit:
			err = ts.Commit(stmt(tc.n, false), func(Resource) (bool, error) { return false, nil }, noRecord)
		case opAbort:
			err = ts.Abort(stmt(tc.n, false))
		}
		if got := codeOf(err); got != tc.want {
			t.Errorf("%v, op %d, txnNumber %d: code %d (%v), want %d", tc.state, tc.op, tc.n, got, err, tc.want)
		}
	}
	for s := range states {
		if !covered[s] {
			t.Errorf("state %v has no row", s)
		}
	}
}

func TestNewerTransactionAbortsOlder(t *testing.T) {
	ts := newTable(clock.NewManual(txnT0))
	old := &fakeResource{}
	tx, err := ts.Enter(stmt(1, true), func() Resource { return old })
	if err != nil {
		t.Fatal(err)
	}
	ts.Leave(tx)
	tx, err = ts.Enter(stmt(2, true), func() Resource { return &fakeResource{} })
	if err != nil {
		t.Fatal(err)
	}
	ts.Leave(tx)
	if old.aborted != 1 {
		t.Fatalf("the older transaction was aborted %d times, want 1", old.aborted)
	}
	s := ts.Stats()
	if s.TotalStarted != 2 || s.TotalAborted != 1 || s.CurrentOpen != 1 || s.CurrentInactive != 1 || s.CurrentActive != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCommitFailureAbortsOrIsUnknown(t *testing.T) {
	ts := newTable(clock.NewManual(txnT0))
	res := &fakeResource{}
	tx, _ := ts.Enter(stmt(1, true), func() Resource { return res })
	ts.Leave(tx)
	conflict := mongoerr.New(mongoerr.WriteConflict, "conflict")
	if err := ts.Commit(stmt(1, false), func(Resource) (bool, error) { return false, conflict }, noRecord); err != conflict {
		t.Fatalf("commit: %v", err)
	}
	if tx.State != TxnAborted || res.aborted != 1 {
		t.Fatalf("after a conflict: %v, aborted %d", tx.State, res.aborted)
	}
	if err := ts.Commit(stmt(1, false), nil, noRecord); codeOf(err) != mongoerr.NoSuchTransaction {
		t.Fatalf("retried commit after a conflict: %v, want NoSuchTransaction", err)
	}
}

func TestReaperAbortsAtTheLifetimeLimit(t *testing.T) {
	clk := clock.NewManual(txnT0)
	ts := newTable(clk)
	res := &fakeResource{}
	tx, _ := ts.Enter(stmt(1, true), func() Resource { return res })
	ts.Leave(tx)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ts.Run(ctx) }()
	defer func() { cancel(); <-done }()
	clk.Advance(DefaultTxnLifetime - time.Second)
	if _, err := ts.Enter(stmt(1, false), nil); err != nil {
		t.Fatalf("a second before the limit: %v", err)
	}
	ts.Leave(tx)
	clk.Advance(time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for ts.Stats().TotalAborted == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if res.aborted != 1 {
		t.Fatalf("at the limit the resource was aborted %d times, want 1", res.aborted)
	}
	if _, err := ts.Enter(stmt(1, false), nil); codeOf(err) != mongoerr.NoSuchTransaction {
		t.Fatalf("a statement after the reaper: %v, want NoSuchTransaction", err)
	}
}

// TestReaperInterruptsRunningStatements: a statement inside the
// transaction when the reaper aborts it is interrupted with
// ErrLifetimeExceeded; one that detached before is not.
func TestReaperInterruptsRunningStatements(t *testing.T) {
	clk := clock.NewManual(txnT0)
	ts := newTable(clk)
	tx, _ := ts.Enter(stmt(1, true), func() Resource { return &fakeResource{} })
	var running, finished []error
	detach := ts.Attach(tx, func(err error) { finished = append(finished, err) })
	detach()
	ts.Attach(tx, func(err error) { running = append(running, err) })
	if ts.Reap(clk.Now().Add(DefaultTxnLifetime - time.Nanosecond)); len(running) != 0 {
		t.Fatalf("before the limit the statement was interrupted: %v", running)
	}
	ts.Reap(clk.Now().Add(DefaultTxnLifetime))
	if len(running) != 1 || !errors.Is(running[0], ErrLifetimeExceeded) || len(finished) != 0 {
		t.Fatalf("at the limit: running statement got %v, detached one %v; want ErrLifetimeExceeded once, nothing", running, finished)
	}
}

// TestRetriedCommitReadsTheCommitRecord: a retried commit this member did
// not run, or whose outcome it did not see, answers from the durable
// record: ok when it says committed, else NoSuchTransaction (no
// transaction here) or still unknown.
func TestRetriedCommitReadsTheCommitRecord(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	lsid := []byte("s1")
	recorded := func() (bool, error) { return CommittedTxn(eng, lsid, 5) }
	ts := newTable(clock.NewManual(txnT0))
	if err := ts.Commit(stmt(5, false), nil, recorded); codeOf(err) != mongoerr.NoSuchTransaction {
		t.Fatalf("no transaction and no record: %v, want NoSuchTransaction", err)
	}
	tx, _ := ts.Enter(stmt(5, true), func() Resource { return &fakeResource{} })
	ts.Leave(tx)
	_ = ts.Commit(stmt(5, false), func(Resource) (bool, error) { return true, mongoerr.New(mongoerr.HostUnreachable, "lost") }, recorded)
	if err := ts.Commit(stmt(5, false), nil, recorded); codeOf(err) != mongoerr.InterruptedDueToReplStateChange {
		t.Fatalf("unknown and no record: %v, want the unknown answer", err)
	}
	b := eng.NewBatch()
	if err := RecordCommit(lsid, 5, txnT0)(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	if err := ts.Commit(stmt(5, false), nil, recorded); err != nil {
		t.Fatalf("unknown, then recorded: %v", err)
	}
	if err := newTable(clock.NewManual(txnT0)).Commit(stmt(5, false), nil, recorded); err != nil {
		t.Fatalf("another member with the record: %v", err)
	}
	if n, err := Sweep(eng, txnT0.Add(Lifetime+time.Minute)); err != nil || n != 0 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if ok, err := CommittedTxn(eng, lsid, 5); ok || err != nil {
		t.Fatalf("the record outlived Lifetime: %v, %v", ok, err)
	}
}
