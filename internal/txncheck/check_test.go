package txncheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func ok(id int, ops ...MicroOp) Txn   { return Txn{ID: id, Status: Committed, Ops: ops} }
func fail(id int, ops ...MicroOp) Txn { return Txn{ID: id, Status: Aborted, Ops: ops} }
func info(id int, ops ...MicroOp) Txn { return Txn{ID: id, Status: Indeterminate, Ops: ops} }

// badHistory is a hand-built history that shows exactly one anomaly, with
// the transactions its example must name.
type badHistory struct {
	history []Txn
	txns    []int
}

// badHistories holds one row per anomaly of Anomalies(); a new anomaly
// without a row fails TestEveryAnomalyHasABadHistory.
func badHistories() map[Anomaly]badHistory {
	return map[Anomaly]badHistory{
		G0: {txns: []int{1, 2}, history: []Txn{
			ok(1, AppendOp(0, 1), AppendOp(1, 2)),
			ok(2, AppendOp(0, 3), AppendOp(1, 4)),
			ok(3, ReadOp(0, 1, 3), ReadOp(1, 4, 2)),
		}},
		G1a: {txns: []int{2, 1}, history: []Txn{
			fail(1, AppendOp(0, 1)),
			ok(2, ReadOp(0, 1)),
		}},
		G1b: {txns: []int{2, 1}, history: []Txn{
			ok(1, AppendOp(0, 1), AppendOp(0, 2)),
			ok(2, ReadOp(0, 1)),
		}},
		G1c: {txns: []int{1, 2}, history: []Txn{
			ok(1, AppendOp(0, 1), ReadOp(1, 2)),
			ok(2, AppendOp(1, 2), ReadOp(0, 1)),
		}},
		GSingle: {txns: []int{1, 2}, history: []Txn{
			ok(1, AppendOp(0, 1), AppendOp(1, 1)),
			ok(2, ReadOp(0), ReadOp(1, 1)),
			ok(3, ReadOp(0, 1)),
		}},
		G2Item: {txns: []int{1, 2}, history: []Txn{
			ok(1, ReadOp(0), ReadOp(1), AppendOp(0, 1)),
			ok(2, ReadOp(0), ReadOp(1), AppendOp(1, 2)),
			ok(3, ReadOp(0, 1), ReadOp(1, 2)),
		}},
		LostUpdate: {txns: []int{1, 2}, history: []Txn{
			ok(1, ReadOp(0, 5), AppendOp(0, 1)),
			ok(2, ReadOp(0, 5), AppendOp(0, 2)),
			ok(3, AppendOp(0, 5)),
		}},
		DuplicateAppend: {txns: []int{2, 1}, history: []Txn{
			ok(1, AppendOp(0, 1)),
			ok(2, ReadOp(0, 1, 1)),
		}},
		Internal: {txns: []int{1}, history: []Txn{
			ok(1, AppendOp(0, 1), ReadOp(0)),
		}},
		IncompatibleOrder: {txns: []int{4}, history: []Txn{
			ok(1, AppendOp(0, 1)),
			ok(2, AppendOp(0, 2)),
			ok(3, ReadOp(0, 1, 2)),
			ok(4, ReadOp(0, 2)),
		}},
		GarbageRead: {txns: []int{1}, history: []Txn{
			ok(1, ReadOp(0, 9)),
		}},
	}
}

func TestEveryAnomalyHasABadHistory(t *testing.T) {
	rows := badHistories()
	for _, a := range Anomalies() {
		if _, ok := rows[a]; !ok {
			t.Errorf("anomaly %s has no bad history", a)
		}
		if a.Meaning() == "" {
			t.Errorf("anomaly %s has no meaning", a)
		}
	}
	if len(rows) != len(Anomalies()) {
		t.Errorf("%d bad histories for %d anomalies", len(rows), len(Anomalies()))
	}
}

// TestBadHistories feeds each known-bad history to the checker and
// expects exactly its anomaly, once, naming its transactions.
func TestBadHistories(t *testing.T) {
	for a, row := range badHistories() {
		t.Run(string(a), func(t *testing.T) {
			result, err := Check(row.history)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Collect(maps.Keys(result.Counts)); !slices.Equal(got, []Anomaly{a}) || result.Counts[a] != 1 {
				t.Fatalf("counts %v, want one %s\n%s", result.Counts, a, result)
			}
			if result.Valid() == a.Forbidden() {
				t.Errorf("Valid() = %v for a history with %s", result.Valid(), a)
			}
			ex := result.Examples[a][0]
			if !slices.Equal(slices.Sorted(slices.Values(ex.Txns)), slices.Sorted(slices.Values(row.txns))) {
				t.Errorf("example names %v, want %v", ex.Txns, row.txns)
			}
			for _, id := range row.txns {
				if !strings.Contains(ex.Explanation, fmt.Sprintf("T%d", id)) {
					t.Errorf("explanation does not name T%d: %s", id, ex.Explanation)
				}
			}
		})
	}
}

// TestCycleEdgesAreTheirAnomaly checks that each cycle's edges are the
// kinds its anomaly is defined by, and that the cycle closes.
func TestCycleEdgesAreTheirAnomaly(t *testing.T) {
	rwEdges := map[Anomaly]func(int) bool{
		G0:      func(n int) bool { return n == 0 },
		G1c:     func(n int) bool { return n == 0 },
		GSingle: func(n int) bool { return n == 1 },
		G2Item:  func(n int) bool { return n >= 2 },
	}
	for a, rwOK := range rwEdges {
		result, err := Check(badHistories()[a].history)
		if err != nil {
			t.Fatal(err)
		}
		cycle := result.Examples[a][0].Cycle
		rw, wr := 0, 0
		for i, dep := range cycle {
			if next := cycle[(i+1)%len(cycle)]; dep.To != next.From {
				t.Errorf("%s: edge %d ends at T%d, next starts at T%d", a, i, dep.To, next.From)
			}
			switch dep.Kind {
			case RW:
				rw++
			case WR:
				wr++
			}
		}
		if !rwOK(rw) || (a == G0 && wr > 0) || (a == G1c && wr == 0) {
			t.Errorf("%s: cycle %+v has %d rw and %d wr edges", a, cycle, rw, wr)
		}
	}
}

// TestIndeterminateTransactions: an indeterminate transaction whose
// append was read committed (a node of the graph, and its cycle found);
// one never observed is ignored, and neither's reads count.
func TestIndeterminateTransactions(t *testing.T) {
	observed := []Txn{
		info(1, AppendOp(0, 1), AppendOp(1, 1), ReadOp(2, 77)),
		ok(2, ReadOp(0), ReadOp(1, 1)),
		ok(3, ReadOp(0, 1)),
		info(4, AppendOp(0, 2), ReadOp(0, 88)),
	}
	result, err := Check(observed)
	if err != nil {
		t.Fatal(err)
	}
	if result.Graphed != 3 || result.Counts[GSingle] != 1 || len(result.Counts) != 1 {
		t.Fatalf("graphed %d, counts %v; want 3 graphed and one G-single\n%s", result.Graphed, result.Counts, result)
	}
}

func TestContractViolationsAreErrors(t *testing.T) {
	histories := map[string][]Txn{
		"value appended twice": {ok(1, AppendOp(0, 1)), fail(2, AppendOp(0, 1))},
		"unknown status":       {{ID: 1, Ops: []MicroOp{ReadOp(0)}}},
		"unknown micro-op":     {ok(1, MicroOp{Kind: 9, Key: 0})},
	}
	for name, history := range histories {
		if _, err := Check(history); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReportNamesEveryAnomalyFound(t *testing.T) {
	var history []Txn
	id := 0
	for row, a := range Anomalies() {
		// Renumber each row's IDs and shift its keys so rows do not meet.
		for _, txn := range badHistories()[a].history {
			id++
			txn.ID = id
			txn.Ops = slices.Clone(txn.Ops)
			for i := range txn.Ops {
				txn.Ops[i].Key += 10 * row
			}
			history = append(history, txn)
		}
	}
	result, err := Check(history)
	if err != nil {
		t.Fatal(err)
	}
	report := result.String()
	for _, a := range Anomalies() {
		if result.Counts[a] != 1 || !strings.Contains(report, string(a)+" ×1") {
			t.Errorf("%s: count %d in the combined history\n%s", a, result.Counts[a], report)
		}
	}
}

// TestExamplesAreBoundedCountsAreNot: a history with more instances of an
// anomaly than maxExamples counts them all and keeps maxExamples.
func TestExamplesAreBoundedCountsAreNot(t *testing.T) {
	const reads = 3 * maxExamples
	var history []Txn
	for id := 1; id <= reads; id++ {
		history = append(history, ok(id, ReadOp(id, 1000+id)))
	}
	result, err := Check(history)
	if err != nil {
		t.Fatal(err)
	}
	if result.Counts[GarbageRead] != reads || len(result.Examples[GarbageRead]) != maxExamples {
		t.Fatalf("%d garbage reads, %d examples; want %d and %d",
			result.Counts[GarbageRead], len(result.Examples[GarbageRead]), reads, maxExamples)
	}
}
