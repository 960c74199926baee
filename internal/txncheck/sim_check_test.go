package txncheck

import (
	"fmt"
	"testing"
)

// simulatedCase is one simulator run: size, concurrency and seed.
type simulatedCase struct {
	txns, clients, keys int
	seed                uint64
}

func simulatedCases() []simulatedCase {
	return []simulatedCase{
		{txns: 300, clients: 1, keys: 3, seed: 1},
		{txns: 2000, clients: 1, keys: 5, seed: 2},
		{txns: 500, clients: 3, keys: 3, seed: 3},
		{txns: 2000, clients: 8, keys: 5, seed: 4},
		{txns: 2000, clients: 16, keys: 8, seed: 5},
	}
}

// TestSnapshotIsolationHistoriesAreValid: serial and concurrent histories
// of a correct snapshot-isolation store show no forbidden anomaly. The
// concurrent ones must have had conflicts, or they proved nothing.
func TestSnapshotIsolationHistoriesAreValid(t *testing.T) {
	for _, tc := range simulatedCases() {
		t.Run(fmt.Sprintf("%dtxns_%dclients_seed%d", tc.txns, tc.clients, tc.seed), func(t *testing.T) {
			history := newSimulator(tc.seed, true, tc.keys).run(tc.txns, tc.clients)
			result, err := Check(history)
			if err != nil {
				t.Fatal(err)
			}
			if !result.Valid() {
				t.Fatalf("forbidden anomalies in a snapshot-isolation history: %v\n%s", result.Forbidden(), result)
			}
			if again, _ := Check(history); again.String() != result.String() {
				t.Errorf("two checks of one history differ:\n%s\n---\n%s", result, again)
			}
			aborted := countStatus(history, Aborted)
			if (tc.clients > 1) != (aborted > 0) {
				t.Errorf("%d clients but %d write-write aborts", tc.clients, aborted)
			}
			if result.Graphed < tc.txns/2 {
				t.Errorf("only %d of %d transactions in the graph", result.Graphed, tc.txns)
			}
			t.Logf("%d txns, %d aborted, %d graphed, G2-item %d", tc.txns, aborted, result.Graphed, result.Counts[G2Item])
		})
	}
}

// TestReadCommittedHistoriesAreCaught: the same workload on a store
// without snapshots or conflict checks shows read skew or lost updates.
func TestReadCommittedHistoriesAreCaught(t *testing.T) {
	for _, tc := range simulatedCases() {
		if tc.clients == 1 {
			continue // serial runs are serializable whatever the isolation
		}
		t.Run(fmt.Sprintf("%dtxns_%dclients_seed%d", tc.txns, tc.clients, tc.seed), func(t *testing.T) {
			history := newSimulator(tc.seed, false, tc.keys).run(tc.txns, tc.clients)
			result, err := Check(history)
			if err != nil {
				t.Fatal(err)
			}
			if result.Counts[GSingle]+result.Counts[LostUpdate] == 0 {
				t.Fatalf("read-committed history passed as snapshot isolation\n%s", result)
			}
			t.Logf("counts %v", result.Counts)
		})
	}
}

func countStatus(history []Txn, status Status) int {
	n := 0
	for _, txn := range history {
		if txn.Status == status {
			n++
		}
	}
	return n
}

// BenchmarkCheck checks 2,000-transaction snapshot-isolation histories,
// serial (long lists, every transaction committed) and concurrent (many
// aborts, write-skew cycles), and reports the cost per transaction.
func BenchmarkCheck(b *testing.B) {
	for _, clients := range []int{1, 8} {
		history := newSimulator(4, true, 5).run(2000, clients)
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			for range b.N {
				if _, err := Check(history); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(history)), "ns/txn")
		})
	}
}
