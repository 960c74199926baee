package commands

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestTransactionCommandsAgainstTheTable: every command of the table is
// either run inside a transaction or refused with 263 (count with its
// own text), and every command the allow-list names is in the table.
func TestTransactionCommandsAgainstTheTable(t *testing.T) {
	table := buildTable(true)
	for _, name := range transactionCommands {
		if _, ok := table[name]; !ok {
			t.Errorf("the transaction allow-list names %q, which the command table lacks", name)
		}
	}
	for name := range table {
		err := allowedInTransaction(name)
		allowed := slices.Contains(transactionCommands, name)
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

func TestTransactionRefusesWritingAndStreamingStages(t *testing.T) {
	for _, stage := range stagesOutsideTransactions {
		r := &request{name: "aggregate", body: bson.D{{Key: "aggregate", Value: "c"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: stage, Value: bson.D{}}}}}}}
		err := pipelineInTransaction(r)
		if err == nil || mongoerr.As(err).Msg != "Stage not supported inside of a multi-document transaction: "+stage {
			t.Errorf("%s: %v", stage, err)
		}
	}
	r := &request{name: "aggregate", body: bson.D{{Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{}}}}}}}
	if err := pipelineInTransaction(r); err != nil {
		t.Errorf("$group refused: %v", err)
	}
}

// TestTransactionLabels: mongod's isTransientTransactionError and its
// commit rule, by command and code.
func TestTransactionLabels(t *testing.T) {
	cases := []struct {
		cmd   string
		code  mongoerr.Code
		wce   bool
		label string
	}{
		{"insert", mongoerr.WriteConflict, false, "TransientTransactionError"},
		{"find", mongoerr.NoSuchTransaction, false, "TransientTransactionError"},
		{"update", mongoerr.NotWritablePrimary, false, "TransientTransactionError"},
		{"insert", mongoerr.DuplicateKey, false, ""},
		{"insert", mongoerr.TransactionTooOld, false, ""},
		{"commitTransaction", mongoerr.NoSuchTransaction, false, "TransientTransactionError"},
		{"commitTransaction", mongoerr.NoSuchTransaction, true, "UnknownTransactionCommitResult"},
		{"commitTransaction", mongoerr.InterruptedDueToReplStateChange, false, "UnknownTransactionCommitResult"},
		{"commitTransaction", mongoerr.MaxTimeMSExpired, false, "UnknownTransactionCommitResult"},
		{"commitTransaction", mongoerr.TransactionCommitted, false, ""},
		{"abortTransaction", mongoerr.TransactionCommitted, false, ""},
	}
	for _, tc := range cases {
		r := &request{name: tc.cmd, body: bson.D{{Key: tc.cmd, Value: 1}, {Key: "autocommit", Value: false}}}
		err := mongoerr.New(tc.code, "x")
		reply := mongoerr.Reply(err)
		if tc.wce {
			reply = append(reply, bson.E{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: int32(64)}}})
		}
		got := ""
		if v, ok := fieldOf(labelTransaction(r, reply, err), "errorLabels"); ok {
			got = v.(bson.A)[0].(string)
		}
		if got != tc.label {
			t.Errorf("%s, code %d, write concern error %v: label %q, want %q", tc.cmd, tc.code, tc.wce, got, tc.label)
		}
	}
}

func fieldOf(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}
