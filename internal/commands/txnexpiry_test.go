package commands

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
)

type abortOnly struct{}

func (abortOnly) Abort() {}

// TestStatementRunningAtExpiryFails290: a statement inside its
// transaction when the reaper aborts it sees its context end with
// mongod's 290 and answers it, even with a reply in hand; a statement
// that ended before the expiry keeps its reply.
func TestStatementRunningAtExpiryFails290(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))
	h := &Handler{txns: session.NewTransactions(clk)}
	stmt := session.TxnStatement{LSID: []byte("s"), Label: "s", Number: 1, Start: true}
	state, err := h.txns.Enter(stmt, func() session.Resource { return abortOnly{} })
	if err != nil {
		t.Fatal(err)
	}
	ok := bson.D{{Key: "n", Value: int32(1)}}
	before := &request{ctx: context.Background(), txn: &inTransaction{state: state}}
	before.txn.detach = h.interruptOnExpiry(before, state)
	if reply, err := h.leaveTransaction(before, ok, nil); err != nil || len(reply) != 1 {
		t.Fatalf("a statement before the expiry: %v, %v; want its reply", reply, err)
	}

	stmt.Start = false
	if _, err := h.txns.Enter(stmt, nil); err != nil {
		t.Fatal(err)
	}
	running := &request{ctx: context.Background(), txn: &inTransaction{state: state}}
	running.txn.detach = h.interruptOnExpiry(running, state)
	h.txns.Reap(clk.Now().Add(session.DefaultTxnLifetime))
	const code, msg = mongoerr.TransactionExceededLifetimeLimitSeconds, "operation was interrupted"
	if e := mongoerr.As(checkInterrupt(running.ctx)); e == nil || e.Code != code || e.Msg != msg {
		t.Fatalf("the running statement's interrupt check: %v, want %v %q", e, code, msg)
	}
	if _, err := h.leaveTransaction(running, ok, nil); mongoerr.As(err) == nil || mongoerr.As(err).Code != code {
		t.Fatalf("the running statement's answer: %v, want %v", err, code)
	}
}
