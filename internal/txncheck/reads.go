package txncheck

import (
	"fmt"
	"slices"
)

// ownView is what a transaction knows of one key from its own operations:
// the whole list once it has read the key, else only its own appends,
// which any read must end with.
type ownView struct {
	known    bool
	list     []int
	appended bool
}

func (v *ownView) append(value int) {
	v.list = append(v.list, value)
	v.appended = true
}

// explains reports whether a read of list agrees with the view.
func (v *ownView) explains(list []int) bool {
	if v.known {
		return slices.Equal(list, v.list)
	}
	return len(list) >= len(v.list) && slices.Equal(list[len(list)-len(v.list):], v.list)
}

// observe takes the read's list as the view; clipped, so a later append
// copies it instead of writing into the history's slice.
func (v *ownView) observe(list []int) {
	v.known, v.list = true, slices.Clip(list)
}

// checkReads checks every read of every committed transaction on its own
// (internal consistency, duplicates, garbage, aborted and intermediate
// reads) and collects them for the version orders and the graph. The
// reads of aborted and indeterminate transactions are not known.
func (c *checker) checkReads() {
	for i, txn := range c.history {
		if txn.Status == Committed {
			c.checkTxnReads(i)
		}
	}
}

func (c *checker) checkTxnReads(i int) {
	views := map[int]*ownView{}
	for _, op := range c.history[i].Ops {
		view := views[op.Key]
		if view == nil {
			view = &ownView{}
			views[op.Key] = view
		}
		if op.Kind == Append {
			view.append(op.Value)
			continue
		}
		if !view.explains(op.List) {
			c.reportInternal(i, op, view)
		}
		r := read{txn: i, key: op.Key, list: op.List, beforeAppend: !view.appended}
		r.external = c.externalLength(r)
		r.usable = c.checkRead(r)
		c.reads = append(c.reads, r)
		view.observe(op.List)
	}
}

// externalLength strips the reader's own appends from the end of a read.
func (c *checker) externalLength(r read) int {
	n := len(r.list)
	for n > 0 {
		w, ok := c.writes[keyValue{r.key, r.list[n-1]}]
		if !ok || w.txn != r.txn {
			break
		}
		n--
	}
	return n
}

// cleanList is, per key, the longest read checked so far whose values
// are distinct and appended by transactions that did not abort. Reads
// mostly extend it, so a value is looked up once, not once per read.
type cleanList struct {
	list     []int
	position map[int]int
}

// readFindings is what one read has been reported for so far: each
// anomaly once per read.
type readFindings struct{ duplicate, garbage, aborted bool }

// checkRead reports the anomalies one read shows by itself and marks its
// values observed. It returns false when the read has a duplicated value.
func (c *checker) checkRead(r read) bool {
	clean := c.clean[r.key]
	if clean == nil {
		clean = &cleanList{position: map[int]int{}}
		c.clean[r.key] = clean
	}
	shared := commonPrefix(r.list, clean.list)
	var found readFindings
	seen := make(map[int]bool, len(r.list)-shared)
	for _, value := range r.list[shared:] {
		pos, inClean := clean.position[value]
		c.checkValue(r, value, seen[value] || (inClean && pos < shared), &found)
		seen[value] = true
	}
	if shared == len(clean.list) && found == (readFindings{}) {
		for _, value := range r.list[shared:] {
			clean.position[value] = len(clean.list)
			clean.list = append(clean.list, value)
		}
	}
	c.checkIntermediate(r)
	return !found.duplicate
}

// checkValue checks one value of a read that is not in the key's clean
// list: seenBefore says it occurred earlier in the same read.
func (c *checker) checkValue(r read, value int, seenBefore bool, found *readFindings) {
	kv := keyValue{r.key, value}
	c.observed[kv] = true
	if seenBefore && !found.duplicate {
		found.duplicate = true
		c.reportValue(DuplicateAppend, r, value, fmt.Sprintf("in which %d%s appears twice", value, c.appendedBy(kv)))
	}
	w, ok := c.writes[kv]
	switch {
	case !ok && !found.garbage:
		found.garbage = true
		c.reportValue(GarbageRead, r, value, fmt.Sprintf("but no transaction appended %d", value))
	case ok && c.history[w.txn].Status == Aborted && !found.aborted:
		found.aborted = true
		c.reportValue(G1a, r, value, fmt.Sprintf("but %d was appended by T%d, which aborted", value, c.history[w.txn].ID))
	}
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// checkIntermediate reports a read whose observed version is not its
// writer's last append to the key: it saw the middle of a transaction.
func (c *checker) checkIntermediate(r read) {
	if r.external == 0 {
		return
	}
	value := r.list[r.external-1]
	w, ok := c.writes[keyValue{r.key, value}]
	if !ok || w.final || c.history[w.txn].Status == Aborted {
		return
	}
	c.reportValue(G1b, r, value, fmt.Sprintf("ending in %d, which T%d followed with a later append to that key",
		value, c.history[w.txn].ID))
}

// reportValue adds an example about one value of one read; detail says
// what is wrong with the value.
func (c *checker) reportValue(a Anomaly, r read, value int, detail string) {
	id := c.history[r.txn].ID
	desc := fmt.Sprintf("T%d read key %d = %v", id, r.key, r.list)
	txns := []int{id}
	if w, ok := c.writes[keyValue{r.key, value}]; ok && w.txn != r.txn {
		txns = append(txns, c.history[w.txn].ID)
	}
	c.result.add(Example{Anomaly: a, Txns: txns, Explanation: desc + ", " + detail})
}

// appendedBy names the transaction that appended a value, for reports.
func (c *checker) appendedBy(kv keyValue) string {
	if w, ok := c.writes[kv]; ok {
		return fmt.Sprintf(" (appended by T%d)", c.history[w.txn].ID)
	}
	return ""
}

func (c *checker) reportInternal(i int, op MicroOp, view *ownView) {
	expected := fmt.Sprintf("a list ending in its own appends %v", view.list)
	if view.known {
		expected = fmt.Sprintf("%v, from its earlier read and appends", view.list)
	}
	id := c.history[i].ID
	c.result.add(Example{Anomaly: Internal, Txns: []int{id},
		Explanation: fmt.Sprintf("T%d read key %d = %v, but its own operations imply %s", id, op.Key, op.List, expected)})
}

// versionRead identifies the version a read observed: its last value, or
// the key's initial empty state.
type versionRead struct {
	key, last int
	empty     bool
}

// checkLostUpdates reports committed transactions that read the same
// version of a key before appending to it: first-committer-wins lets at
// most one of them commit.
func (c *checker) checkLostUpdates() {
	groups := map[versionRead][]int{}
	var order []versionRead
	type txnKey struct{ txn, key int }
	counted := map[txnKey]bool{} // a transaction's first read of a key only
	for _, r := range c.reads {
		if !r.beforeAppend || !r.usable || counted[txnKey{r.txn, r.key}] || !c.appendsTo(r.txn, r.key) {
			continue
		}
		counted[txnKey{r.txn, r.key}] = true
		v := versionRead{key: r.key, empty: len(r.list) == 0}
		if !v.empty {
			v.last = r.list[len(r.list)-1]
		}
		if groups[v] == nil {
			order = append(order, v)
		}
		groups[v] = append(groups[v], r.txn)
	}
	for _, v := range order {
		if len(groups[v]) > 1 {
			c.reportLostUpdate(v, groups[v])
		}
	}
}

func (c *checker) appendsTo(txn, key int) bool {
	return slices.ContainsFunc(c.history[txn].Ops, func(op MicroOp) bool {
		return op.Kind == Append && op.Key == key
	})
}

func (c *checker) reportLostUpdate(v versionRead, txns []int) {
	ids := make([]int, len(txns))
	for i, txn := range txns {
		ids[i] = c.history[txn].ID
	}
	version := fmt.Sprintf("ending in %d", v.last)
	if v.empty {
		version = "empty"
	}
	c.result.add(Example{Anomaly: LostUpdate, Txns: ids,
		Explanation: fmt.Sprintf("transactions %v all read key %d %s and then appended to it, and all committed",
			txnNames(ids), v.key, version)})
}

// txnNames prints IDs as "T1, T2, T3".
func txnNames(ids []int) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("T%d", id)
	}
	return s
}
