// Package txncheck checks histories of list-append and read transactions
// for the anomalies snapshot isolation forbids, in the manner of Jepsen's
// Elle: it infers each key's version order from the reads, builds the
// dependency graph of the committed transactions (write-write,
// write-read and read-write edges) and names every cycle and every
// non-cycle anomaly it finds, with the transactions involved.
//
// The workload's contract makes the inference sound: every appended value
// is unique per key, and a read returns the whole list, so a read's last
// element names the write it observed and the longest read of a key is
// its version order.
package txncheck

import "fmt"

// Status is how a transaction ended, as its client saw it.
type Status uint8

const (
	// Committed transactions were acknowledged: their writes took effect
	// and their reads are known.
	Committed Status = iota + 1
	// Aborted transactions definitely did not commit: no read may observe
	// their appends.
	Aborted
	// Indeterminate transactions may or may not have committed (the
	// commit's outcome was lost): their appends may be observed, and
	// their reads are not known.
	Indeterminate
)

// String names the status as Jepsen's histories do.
func (s Status) String() string {
	switch s {
	case Committed:
		return "ok"
	case Aborted:
		return "fail"
	case Indeterminate:
		return "info"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// OpKind is what a micro-operation does.
type OpKind uint8

const (
	// Append adds Value to the end of Key's list.
	Append OpKind = iota + 1
	// Read returns Key's whole list.
	Read
)

// MicroOp is one step of a transaction: an append of Value to Key, or a
// read of Key that returned List (empty when the key had no list yet).
type MicroOp struct {
	Kind  OpKind
	Key   int
	Value int
	List  []int
}

// AppendOp is the micro-op [append key value].
func AppendOp(key, value int) MicroOp { return MicroOp{Kind: Append, Key: key, Value: value} }

// ReadOp is the micro-op [read key → list].
func ReadOp(key int, list ...int) MicroOp { return MicroOp{Kind: Read, Key: key, List: list} }

// Txn is one transaction of a history: its ID names it in reports, its
// Process is the client that ran it.
type Txn struct {
	ID      int
	Process int
	Status  Status
	Ops     []MicroOp
}

// String prints the transaction as T<id> with its status and micro-ops.
func (t Txn) String() string {
	s := fmt.Sprintf("T%d(%s)", t.ID, t.Status)
	for _, op := range t.Ops {
		if op.Kind == Append {
			s += fmt.Sprintf(" [append %d %d]", op.Key, op.Value)
		} else {
			s += fmt.Sprintf(" [read %d %v]", op.Key, op.List)
		}
	}
	return s
}
