package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Each aborted attempt is counted by its cause; only WriteConflict counts
// as a conflict.
func TestTransferAbortCauses(t *testing.T) {
	w := &transferWorker{run: &TransferRun{AbortCauses: map[string]int64{}}}
	causes := []error{
		mongo.CommandError{Code: int32(mongoerr.WriteConflict), Labels: []string{"TransientTransactionError"}},
		mongo.CommandError{Code: int32(mongoerr.WriteConflict)},
		mongo.CommandError{Code: int32(mongoerr.NoSuchTransaction)},
		mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: int(mongoerr.DuplicateKey)}}},
		fmt.Errorf("commit: %w", context.DeadlineExceeded),
		fmt.Errorf("connection reset"),
	}
	for _, err := range causes {
		w.countAbort(err)
	}
	want := map[string]int64{"WriteConflict": 2, "NoSuchTransaction": 1, "DuplicateKey": 1, "timeout": 1, "network": 1}
	if fmt.Sprint(w.run.AbortCauses) != fmt.Sprint(want) || w.run.Conflicts != 2 {
		t.Fatalf("causes %v, %d conflicts; want %v and 2", w.run.AbortCauses, w.run.Conflicts, want)
	}
}

// Rounds add up to rates over their summed time; the target's ratio is
// transactions over plain updates, and a broken total fails it whatever
// the ratio.
func TestTxnRatioOverRounds(t *testing.T) {
	plain, txn := &TransferRun{}, &TransferRun{}
	plain.add(&TransferRun{Seconds: 2, Transfers: 400})
	plain.add(&TransferRun{Seconds: 2, Transfers: 400})
	txn.add(&TransferRun{Seconds: 2, Transfers: 300, Attempts: 400, Conflicts: 100, AbortCauses: map[string]int64{"WriteConflict": 100}})
	txn.add(&TransferRun{Seconds: 2, Transfers: 300, Attempts: 400, Conflicts: 100, AbortCauses: map[string]int64{"WriteConflict": 100}})
	if plain.PerSec != 200 || txn.PerSec != 150 || txn.ConflictRate != 0.25 || txn.AbortCauses["WriteConflict"] != 200 {
		t.Fatalf("plain %v/s, txn %v/s, conflict rate %v, causes %v", plain.PerSec, txn.PerSec, txn.ConflictRate, txn.AbortCauses)
	}
	m := &ModeReport{Txn: &TxnResult{Plain: plain, Txn: txn, TotalOK: true}}
	if v, _, ok := txnRatio(m); !ok || v != 0.75 {
		t.Fatalf("ratio %v, %v; want 0.75", v, ok)
	}
	m.Txn.TotalOK = false
	if _, note, _ := txnRatio(m); !strings.HasPrefix(note, incomplete) {
		t.Fatalf("a broken total reads %q, want it marked incomplete", note)
	}
	if _, _, ok := txnRatio(&ModeReport{}); ok {
		t.Fatal("a ratio without the phase")
	}
}
