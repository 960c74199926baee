// Package txnload runs Jepsen-style transactional workloads from
// concurrent clients and records their histories: list-append
// transactions for internal/txncheck, and bank transfers whose snapshot
// reads must always sum to the same total. The clients are interfaces;
// MongoClient runs them through the Go driver's convenient transaction
// API against a real server.
package txnload

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/txncheck"
)

// ErrAborted marks an error after which the transaction certainly did not
// commit. A client wraps it around such errors; any other error leaves the
// outcome unknown, and the history says so.
var ErrAborted = errors.New("txnload: transaction aborted")

// Outcome is how a transaction whose client returned err ended, as the
// checker names it.
func Outcome(err error) txncheck.Status {
	switch {
	case err == nil:
		return txncheck.Committed
	case errors.Is(err, ErrAborted):
		return txncheck.Aborted
	}
	return txncheck.Indeterminate
}

// Event is one line of a history: the invocation of transaction Txn by
// Process (Status 0), or its completion (the Status it ended with: ok,
// fail or info in Jepsen's words).
type Event[Op any] struct {
	Status  txncheck.Status
	Process int
	Txn     int
	Op      Op
	// At is the time since the recorder started, on its clock.
	At time.Duration
	// Err says why a transaction failed or has no known outcome.
	Err string
}

// Invoked reports whether the event is an invocation.
func (e Event[Op]) Invoked() bool { return e.Status == 0 }

// Recorder collects a history from concurrent clients. Safe for
// concurrent use.
type Recorder[Op any] struct {
	clock   clock.Clock
	start   time.Time
	mu      sync.Mutex
	events  []Event[Op]
	nextTxn int
	open    map[int]int // transaction → the process that invoked it
}

// NewRecorder starts a history, timed by clk.
func NewRecorder[Op any](clk clock.Clock) *Recorder[Op] {
	return &Recorder[Op]{clock: clk, start: clk.Now(), open: map[int]int{}}
}

// Invoke records that process is about to run op and returns the
// transaction's number for Complete.
func (r *Recorder[Op]) Invoke(process int, op Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextTxn++
	r.open[r.nextTxn] = process
	r.events = append(r.events, Event[Op]{Process: process, Txn: r.nextTxn, Op: op,
		At: r.clock.Now().Sub(r.start)})
	return r.nextTxn
}

// Complete records how transaction txn ended: op is what it did (with its
// reads when it committed), err what its client returned. It returns how
// the transaction ended.
func (r *Recorder[Op]) Complete(txn int, op Op, err error) (txncheck.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	process, ok := r.open[txn]
	if !ok {
		return 0, fmt.Errorf("txnload: completion of transaction %d, which is not in flight", txn)
	}
	delete(r.open, txn)
	ev := Event[Op]{Status: Outcome(err), Process: process, Txn: txn, Op: op, At: r.clock.Now().Sub(r.start)}
	if err != nil {
		ev.Err = err.Error()
	}
	r.events = append(r.events, ev)
	return ev.Status, nil
}

// Events returns a copy of the history so far.
func (r *Recorder[Op]) Events() []Event[Op] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event[Op](nil), r.events...)
}

// Completed is one transaction of a history: its invocation and how it
// ended (indeterminate when the history holds no completion).
type Completed[Op any] struct {
	Invocation Event[Op]
	Status     txncheck.Status
	Op         Op
}

// Pair matches each invocation with its completion, in invocation order.
// It refuses a history with a completion that matches no invocation.
func Pair[Op any](events []Event[Op]) ([]Completed[Op], error) {
	index := map[int]int{}
	done := map[int]bool{}
	var txns []Completed[Op]
	for _, ev := range events {
		i, invoked := index[ev.Txn]
		switch {
		case ev.Invoked() && invoked:
			return nil, fmt.Errorf("txnload: transaction %d invoked twice", ev.Txn)
		case ev.Invoked():
			index[ev.Txn] = len(txns)
			txns = append(txns, Completed[Op]{Invocation: ev, Status: txncheck.Indeterminate, Op: ev.Op})
		case !invoked || done[ev.Txn] || txns[i].Invocation.Process != ev.Process:
			return nil, fmt.Errorf("txnload: %s of transaction %d by process %d matches no open invocation",
				ev.Status, ev.Txn, ev.Process)
		default:
			done[ev.Txn] = true
			txns[i].Status, txns[i].Op = ev.Status, ev.Op
		}
	}
	return txns, nil
}
