package txnload

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/txncheck"
)

// testCtx bounds a workload run; the fakes finish in milliseconds, the
// bound only stops a hung test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listAppendConfig(clients, txns int) ListAppendConfig {
	return ListAppendConfig{Load: Load{Clients: clients, Txns: txns, Seed: 38}, Keys: 3, MaxOps: 4}
}

// checkWellFormed checks what every recorded history must be: each
// invocation completed once by its own process, and a process that saw
// an unknown outcome invokes nothing afterwards.
func checkWellFormed[Op any](t *testing.T, events []Event[Op], txns int) map[txncheck.Status]int {
	t.Helper()
	pairs, err := Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != txns || len(events) != 2*txns {
		t.Fatalf("%d transactions in %d events, want %d in %d", len(pairs), len(events), txns, 2*txns)
	}
	counts := map[txncheck.Status]int{}
	crashed := map[int]bool{}
	for _, ev := range events {
		if ev.Invoked() && crashed[ev.Process] {
			t.Errorf("process %d invoked transaction %d after an unknown outcome", ev.Process, ev.Txn)
		}
		if ev.Status == txncheck.Indeterminate {
			crashed[ev.Process] = true
		}
		if !ev.Invoked() {
			counts[ev.Status]++
		}
	}
	return counts
}

// wantCounts compares a history's completions with the faults the fake
// dealt: every abort a fail, every lost reply an info.
func wantCounts(t *testing.T, counts map[txncheck.Status]int, dealt faultCounts, txns int) {
	t.Helper()
	want := map[txncheck.Status]int{
		txncheck.Aborted:       dealt[abortBefore],
		txncheck.Indeterminate: dealt[commitThenLoseReply] + dealt[loseBeforeCommit],
	}
	want[txncheck.Committed] = txns - want[txncheck.Aborted] - want[txncheck.Indeterminate]
	for _, typ := range []txncheck.Status{txncheck.Committed, txncheck.Aborted, txncheck.Indeterminate} {
		if counts[typ] != want[typ] || want[typ] == 0 {
			t.Errorf("%d %s completions, want %d (and more than 0)", counts[typ], typ, want[typ])
		}
	}
}

// TestListAppendRecordsASerializableHistory runs concurrent clients
// against a serializable fake with aborts and lost replies: the history
// is well formed, its outcomes are the ones the fake dealt, and the
// checker finds nothing.
func TestListAppendRecordsASerializableHistory(t *testing.T) {
	const txns = 400
	fake := newFakeLists(0)
	rec := NewRecorder[[]txncheck.MicroOp](clock.Real{})
	if err := RunListAppend(testCtx(t), listAppendConfig(4, txns), fake, rec); err != nil {
		t.Fatal(err)
	}
	events := rec.Events()
	wantCounts(t, checkWellFormed(t, events, txns), fake.dealt, txns)
	history, err := ListAppendHistory(events)
	if err != nil {
		t.Fatal(err)
	}
	result, err := txncheck.Check(history)
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Counts) != 0 {
		t.Fatalf("anomalies in a serializable history:\n%s", result)
	}
	// Lost replies of committed transactions that a read saw are graphed.
	if ok := countStatus(history, txncheck.Committed); result.Graphed <= ok {
		t.Errorf("graphed %d, committed %d: no observed indeterminate transaction", result.Graphed, ok)
	}
}

// TestListAppendStaleReadsAreCaught: the same run against a fake whose
// reads lag one transaction behind is not snapshot isolation, and the
// recorded history shows it. One client keeps the run repeatable.
func TestListAppendStaleReadsAreCaught(t *testing.T) {
	const txns = 300
	rec := NewRecorder[[]txncheck.MicroOp](clock.Real{})
	if err := RunListAppend(testCtx(t), listAppendConfig(1, txns), newFakeLists(1), rec); err != nil {
		t.Fatal(err)
	}
	history, err := ListAppendHistory(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	result, err := txncheck.Check(history)
	if err != nil {
		t.Fatal(err)
	}
	if result.Counts[txncheck.GSingle] == 0 {
		t.Fatalf("stale reads passed without read skew:\n%s", result)
	}
}

func TestBankRecordsAConsistentHistory(t *testing.T) {
	const txns, accounts, each = 400, 5, 100
	fake := newFakeBank(accounts, each, false)
	rec := NewRecorder[BankOp](clock.Real{})
	cfg := BankConfig{Load: Load{Clients: 4, Txns: txns, Seed: 38}, Accounts: accounts, MaxTransfer: 30}
	if err := RunBank(testCtx(t), cfg, fake, rec); err != nil {
		t.Fatal(err)
	}
	events := rec.Events()
	checkWellFormed(t, events, txns)
	result, err := CheckBank(events, accounts, accounts*each)
	if err != nil {
		t.Fatal(err)
	}
	if !result.Valid() || result.Reads == 0 || result.Transfers == 0 {
		t.Fatalf("result %+v", result)
	}
	if result.Reads+result.Transfers+result.Failed+result.Indeterminate != txns {
		t.Errorf("result %+v does not add up to %d transactions", result, txns)
	}
}

// TestBankTornCommitsAreCaught: a fake that applies only the debit of a
// transfer whose reply was lost changes the total, and the reads after
// it say so.
func TestBankTornCommitsAreCaught(t *testing.T) {
	const txns, accounts, each = 200, 4, 100
	rec := NewRecorder[BankOp](clock.Real{})
	cfg := BankConfig{Load: Load{Clients: 1, Txns: txns, Seed: 38}, Accounts: accounts, MaxTransfer: 10}
	if err := RunBank(testCtx(t), cfg, newFakeBank(accounts, each, true), rec); err != nil {
		t.Fatal(err)
	}
	result, err := CheckBank(rec.Events(), accounts, accounts*each)
	if err != nil {
		t.Fatal(err)
	}
	if result.Valid() || len(result.Examples) == 0 {
		t.Fatalf("torn transfers passed: %+v", result)
	}
}

func TestBalanceProblems(t *testing.T) {
	cases := map[string]map[int]int64{
		"":                               {0: 5, 1: 5},
		"account 1 is missing":           {0: 10},
		"account 0 is negative":          {0: -1, 1: 11},
		"the balances sum to 9, want 10": {0: 4, 1: 5},
		"3 accounts, want 2":             {0: 5, 1: 5, 2: 0},
	}
	for want, balances := range cases {
		if got := balanceProblem(balances, 2, 10); got != want {
			t.Errorf("%v: %q, want %q", balances, got, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	cases := map[error]txncheck.Status{
		nil: txncheck.Committed,
		fmt.Errorf("%w: WriteConflict", ErrAborted):     txncheck.Aborted,
		fmt.Errorf("wrapped: %w", ErrInsufficientFunds): txncheck.Indeterminate,
		errors.New("connection reset"):                  txncheck.Indeterminate,
		fmt.Errorf("x: %w", context.DeadlineExceeded):   txncheck.Indeterminate,
		fmt.Errorf("%w: %w", ErrAborted, errLostReply):  txncheck.Aborted,
	}
	for err, want := range cases {
		if got := Outcome(err); got != want {
			t.Errorf("Outcome(%v) = %s, want %s", err, got, want)
		}
	}
}

// TestRecorderTimesEventsOnItsClock: events carry the time since the
// recorder started, on the injected clock.
func TestRecorderTimesEventsOnItsClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_800_000_000, 0))
	rec := NewRecorder[int](clk)
	clk.Advance(2 * time.Second)
	txn := rec.Invoke(7, 1)
	clk.Advance(500 * time.Millisecond)
	if _, err := rec.Complete(txn, 1, nil); err != nil {
		t.Fatal(err)
	}
	events := rec.Events()
	if len(events) != 2 || events[0].At != 2*time.Second || events[1].At != 2500*time.Millisecond ||
		events[1].Process != 7 || events[1].Status != txncheck.Committed || !events[0].Invoked() {
		t.Fatalf("events %+v", events)
	}
	if _, err := rec.Complete(txn, 1, nil); err == nil {
		t.Error("a second completion was recorded")
	}
}

func TestPair(t *testing.T) {
	inv := func(txn, process int) Event[int] { return Event[int]{Txn: txn, Process: process} }
	done := func(status txncheck.Status, txn, process int) Event[int] {
		return Event[int]{Status: status, Txn: txn, Process: process}
	}
	pairs, err := Pair([]Event[int]{inv(1, 0), inv(2, 1), done(txncheck.Committed, 1, 0), inv(3, 0),
		done(txncheck.Aborted, 3, 0)})
	if err != nil {
		t.Fatal(err)
	}
	got := []txncheck.Status{pairs[0].Status, pairs[1].Status, pairs[2].Status}
	if len(pairs) != 3 || got[0] != txncheck.Committed || got[1] != txncheck.Indeterminate || got[2] != txncheck.Aborted {
		t.Fatalf("pairs %v: want ok, info (never completed), fail", got)
	}
	bad := map[string][]Event[int]{
		"completion without invocation": {done(txncheck.Committed, 1, 0)},
		"completed twice":               {inv(1, 0), done(txncheck.Indeterminate, 1, 0), done(txncheck.Committed, 1, 0)},
		"completed by another process":  {inv(1, 0), done(txncheck.Committed, 1, 1)},
		"invoked twice":                 {inv(1, 0), inv(1, 0)},
	}
	for name, events := range bad {
		if _, err := Pair(events); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestListAppendHistoryRefusesAChangedTransaction: a completion whose
// micro-ops differ from the invocation's is a client bug, not a history.
func TestListAppendHistoryRefusesAChangedTransaction(t *testing.T) {
	events := []Event[[]txncheck.MicroOp]{
		{Txn: 1, Op: []txncheck.MicroOp{txncheck.AppendOp(0, 1)}},
		{Status: txncheck.Committed, Txn: 1, Op: []txncheck.MicroOp{txncheck.AppendOp(0, 2)}},
	}
	if _, err := ListAppendHistory(events); err == nil {
		t.Fatal("no error")
	}
}

func TestLoadsRefuseEmptyConfigs(t *testing.T) {
	rec := NewRecorder[[]txncheck.MicroOp](clock.Real{})
	for _, cfg := range []ListAppendConfig{
		{Load: Load{Clients: 0, Txns: 1}, Keys: 1, MaxOps: 1},
		{Load: Load{Clients: 1, Txns: 0}, Keys: 1, MaxOps: 1},
		{Load: Load{Clients: 1, Txns: 1}, Keys: 0, MaxOps: 1},
	} {
		if err := RunListAppend(testCtx(t), cfg, newFakeLists(0), rec); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	bank := BankConfig{Load: Load{Clients: 1, Txns: 1}, Accounts: 1, MaxTransfer: 1}
	if err := RunBank(testCtx(t), bank, newFakeBank(1, 1, false), NewRecorder[BankOp](clock.Real{})); err == nil {
		t.Error("a one-account bank ran")
	}
}

func countStatus(history []txncheck.Txn, status txncheck.Status) int {
	n := 0
	for _, txn := range history {
		if txn.Status == status {
			n++
		}
	}
	return n
}
