package txncheck

import (
	"fmt"
	"slices"
)

// Check checks a history of completed transactions. It returns an error
// only when the history breaks the workload's contract (a value appended
// twice to one key, an unknown status or micro-op), which no behaviour of
// the database under test can cause.
func Check(history []Txn) (Result, error) {
	c, err := newChecker(history)
	if err != nil {
		return Result{}, err
	}
	c.checkReads()
	c.markGraphed()
	c.inferOrders()
	c.checkLostUpdates()
	c.buildGraph()
	c.checkCycles()
	return c.result, nil
}

// keyValue is one appended value of one key: unique in a history.
type keyValue struct{ key, value int }

// write says who appended a value and whether it was that transaction's
// last append to the key (a read ending elsewhere is intermediate).
type write struct {
	txn   int
	final bool
}

// read is one read of a committed transaction.
type read struct {
	txn, key int
	list     []int
	// external is the length of the list without the reader's own
	// trailing appends: the version it observed from others.
	external int
	// beforeAppend holds when the transaction had not appended to the
	// key yet, so the read shows its snapshot alone.
	beforeAppend bool
	// usable is false for a read with a duplicated value: it names no
	// version, so it orders nothing.
	usable bool
	// compatible is set once it is known to be a prefix of the key's
	// version order.
	compatible bool
}

// checker holds one Check's state; its steps run in Check's order.
type checker struct {
	history  []Txn
	writes   map[keyValue]write
	reads    []read
	observed map[keyValue]bool
	clean    map[int]*cleanList
	graphed  []bool
	orders   map[int][]int
	graph    *graph
	result   Result
}

func newChecker(history []Txn) (*checker, error) {
	c := &checker{
		history:  history,
		writes:   map[keyValue]write{},
		observed: map[keyValue]bool{},
		clean:    map[int]*cleanList{},
		graphed:  make([]bool, len(history)),
		orders:   map[int][]int{},
		graph:    newGraph(len(history)),
		result: Result{Txns: len(history), Counts: map[Anomaly]int{},
			Examples: map[Anomaly][]Example{}},
	}
	for i, txn := range history {
		if err := c.indexWrites(i, txn); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// indexWrites records who appended each of txn's values, refusing a
// history that breaks the workload's contract.
func (c *checker) indexWrites(i int, txn Txn) error {
	if txn.Status < Committed || txn.Status > Indeterminate {
		return fmt.Errorf("txncheck: T%d has unknown status %d", txn.ID, txn.Status)
	}
	lastAppend := map[int]int{}
	for _, op := range txn.Ops {
		switch op.Kind {
		case Read:
			continue
		case Append:
		default:
			return fmt.Errorf("txncheck: T%d has a micro-op of unknown kind %d", txn.ID, op.Kind)
		}
		kv := keyValue{op.Key, op.Value}
		if prior, dup := c.writes[kv]; dup {
			return fmt.Errorf("txncheck: value %d appended to key %d by both T%d and T%d; values must be unique per key",
				op.Value, op.Key, c.history[prior.txn].ID, txn.ID)
		}
		c.writes[kv] = write{txn: i}
		lastAppend[op.Key] = op.Value
	}
	for key, value := range lastAppend {
		c.writes[keyValue{key, value}] = write{txn: i, final: true}
	}
	return nil
}

// markGraphed decides the graph's nodes: committed transactions, and
// indeterminate ones whose appends some read observed (so they did
// commit). An unobserved indeterminate transaction constrains nothing.
func (c *checker) markGraphed() {
	for kv, w := range c.writes {
		if c.history[w.txn].Status == Indeterminate && c.observed[kv] {
			c.graphed[w.txn] = true
		}
	}
	for i, txn := range c.history {
		if txn.Status == Committed {
			c.graphed[i] = true
			c.result.Graphed++
		} else if c.graphed[i] {
			c.result.Graphed++
		}
	}
}

// inferOrders takes each key's longest usable read as its version order
// and reports every read that is not a prefix of it.
func (c *checker) inferOrders() {
	for _, r := range c.reads {
		if r.usable && len(r.list) > len(c.orders[r.key]) {
			c.orders[r.key] = r.list
		}
	}
	for i := range c.reads {
		r := &c.reads[i]
		if !r.usable {
			continue
		}
		order := c.orders[r.key]
		r.compatible = slices.Equal(r.list, order[:len(r.list)])
		if !r.compatible {
			c.result.add(Example{Anomaly: IncompatibleOrder, Txns: []int{c.history[r.txn].ID},
				Explanation: fmt.Sprintf("T%d read key %d = %v, which is not a prefix of the longest read of that key, %v",
					c.history[r.txn].ID, r.key, r.list, order)})
		}
	}
}
