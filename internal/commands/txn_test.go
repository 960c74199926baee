package commands

import (
	"slices"
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// TestTransactionCommandsAgainstTheTable: every command of the table is
// either run inside a transaction or refused with 263 (count with its
// own text), and every command the allow-list names is in the table.
func TestTransactionCommandsAgainstTheTable(t *testing.T) {
	table := buildTable(true)
	for _, name := range txnrules.Commands() {
		if _, ok := table[name]; !ok {
			t.Errorf("the transaction allow-list names %q, which the command table lacks", name)
		}
	}
	for name := range table {
		err := txnrules.Allowed(name)
		allowed := slices.Contains(txnrules.Commands(), name)
		switch {
		case allowed && err != nil:
			t.Errorf("%s: refused inside a transaction: %v", name, err)
		case !allowed && (err == nil || mongoerr.As(err).Code != mongoerr.OperationNotSupportedInTransaction):
			t.Errorf("%s: %v inside a transaction, want OperationNotSupportedInTransaction", name, err)
		case name == "count" && mongoerr.As(err).Msg != "Cannot run 'count' in a multi-document transaction. Please see http://dochub.mongodb.org/core/transaction-count for a recommended alternative.":
			t.Errorf("count's refusal: %v", err)
		}
	}
}
