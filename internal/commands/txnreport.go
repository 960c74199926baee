package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// currentOp's view of transactions, in the shapes of
// internal/txnrules.

// showTransaction makes r's currentOp entry carry its transaction.
func (h *Handler) showTransaction(r *request, state *session.Transaction) {
	h.deps.Activity.SetTransaction(r.opID, func(now time.Time) bson.D {
		rep, _ := h.txns.Report(state, now)
		return txnrules.TransactionDoc(rep)
	})
}

// idleSessionDocs are the transactions in progress with no statement
// running, as $currentOp's idleSessions shows them.
func (h *Handler) idleSessionDocs(now time.Time, host string) []bson.D {
	var out []bson.D
	for _, rep := range h.txns.Idle(now) {
		out = append(out, txnrules.IdleSessionDoc(rep, host))
	}
	return out
}
