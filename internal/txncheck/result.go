package txncheck

import (
	"fmt"
	"strings"
)

// maxExamples bounds the examples kept per anomaly, so a badly broken
// history still yields a report a person can read.
const maxExamples = 8

// DepKind is the kind of a dependency between two transactions.
type DepKind uint8

const (
	// WW: To appended the version right after From's append (write-write).
	WW DepKind = 1 << iota
	// WR: To read a list that ends in From's append (write-read).
	WR
	// RW: From read a version that To's append overwrote next
	// (read-write, an anti-dependency).
	RW
)

// String names the dependency as Adya does.
func (k DepKind) String() string {
	switch k {
	case WW:
		return "ww"
	case WR:
		return "wr"
	case RW:
		return "rw"
	}
	return fmt.Sprintf("DepKind(%d)", uint8(k))
}

// Dependency is one edge of a cycle: From must precede To.
type Dependency struct {
	Kind     DepKind
	From, To int // transaction IDs
	Key      int
	// Version is, for ww, From's append; for wr, the append of From that
	// To read; for rw, the last value From read (unless Initial).
	Version int
	// Initial is set when an rw edge's reader saw the key empty.
	Initial bool
	// Successor is, for ww and rw, To's append that came right after
	// Version in the key's order.
	Successor int
}

// Example is one instance of an anomaly, with the transactions involved
// (in cycle order for a cycle) and an explanation a person can follow.
type Example struct {
	Anomaly     Anomaly
	Txns        []int
	Cycle       []Dependency
	Explanation string
}

// Result is what Check found in a history.
type Result struct {
	// Txns is the number of transactions in the history; Graphed is how
	// many of them were committed (or indeterminate but observed) and so
	// were nodes of the dependency graph.
	Txns, Graphed int
	// Counts holds, per anomaly found, how many instances: one per read
	// for the read anomalies, one per group of transactions for lost
	// updates, one per strongly connected component for the cycles.
	Counts   map[Anomaly]int
	Examples map[Anomaly][]Example
}

// Valid reports whether the history shows no anomaly that snapshot
// isolation forbids.
func (r Result) Valid() bool { return len(r.Forbidden()) == 0 }

// Forbidden lists the anomalies found that snapshot isolation forbids.
func (r Result) Forbidden() []Anomaly {
	var found []Anomaly
	for _, a := range Anomalies() {
		if a.Forbidden() && r.Counts[a] > 0 {
			found = append(found, a)
		}
	}
	return found
}

// String is a report: the counts, then every example's explanation.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d transactions, %d in the dependency graph", r.Txns, r.Graphed)
	for _, a := range Anomalies() {
		if r.Counts[a] == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s ×%d — %s", a, r.Counts[a], a.Meaning())
		for _, ex := range r.Examples[a] {
			fmt.Fprintf(&b, "\n  %s", strings.ReplaceAll(ex.Explanation, "\n", "\n  "))
		}
	}
	return b.String()
}

// add counts one instance of ex's anomaly and keeps it as an example
// while there are fewer than maxExamples.
func (r *Result) add(ex Example) {
	r.Counts[ex.Anomaly]++
	if len(r.Examples[ex.Anomaly]) < maxExamples {
		r.Examples[ex.Anomaly] = append(r.Examples[ex.Anomaly], ex)
	}
}
