package session

import (
	"sort"
	"time"
)

// TxnReport is one transaction in progress as currentOp shows it
// (mongod's SingleTransactionStats report).
type TxnReport struct {
	Number        int64
	ReadConcern   string
	ReadTimestamp uint64
	Started       time.Time
	Expires       time.Time
	Open          time.Duration
	Active        time.Duration
	// Idle: no statement is running (currentOp's idleSession).
	Idle   bool
	Client TxnClient
}

// Report describes t at now; ok is false when t is not in progress.
func (ts *Transactions) Report(t *Transaction, now time.Time) (rep TxnReport, ok bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.reportLocked(t, now)
}

// Idle describes the transactions in progress with no statement
// running, oldest first.
func (ts *Transactions) Idle(now time.Time) []TxnReport {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []TxnReport
	for _, t := range ts.bySess {
		if rep, ok := ts.reportLocked(t, now); ok && rep.Idle {
			out = append(out, rep)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

func (ts *Transactions) reportLocked(t *Transaction, now time.Time) (TxnReport, bool) {
	if t.State != TxnInProgress {
		return TxnReport{}, false
	}
	active := t.active
	if t.running > 0 {
		active += now.Sub(t.activeSince)
	}
	return TxnReport{
		Number: t.Number, ReadConcern: t.ReadConcern, ReadTimestamp: t.readTimestamp,
		Started: t.Started, Expires: t.Started.Add(ts.Lifetime()),
		Open: now.Sub(t.Started), Active: active,
		Idle: t.running == 0, Client: t.client,
	}, true
}
