package txncheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// cycleCandidates bounds how many edges the search for a shortest cycle
// tries per component: a broken history can have components of thousands
// of edges, and one short cycle per component is what a reader needs.
const cycleCandidates = 64

// buildGraph adds the ww edges of each key's version order and the wr and
// rw edges of each read.
func (c *checker) buildGraph() {
	for _, key := range slices.Sorted(maps.Keys(c.orders)) {
		c.addWriteWrite(key, c.orders[key])
	}
	for _, r := range c.reads {
		if r.usable {
			c.addWriteRead(r)
		}
		if r.compatible {
			c.addReadWrite(r)
		}
	}
}

// writer is the graphed transaction that appended a value, or -1.
func (c *checker) writer(key, value int) int {
	w, ok := c.writes[keyValue{key, value}]
	if !ok || !c.graphed[w.txn] {
		return -1
	}
	return w.txn
}

// addWriteWrite links each append of the order to the next one by
// another transaction.
func (c *checker) addWriteWrite(key int, order []int) {
	prev, prevValue := -1, 0
	for _, value := range order {
		w := c.writer(key, value)
		if w < 0 {
			continue
		}
		if prev >= 0 {
			c.graph.add(Dependency{Kind: WW, From: prev, To: w, Key: key, Version: prevValue, Successor: value})
		}
		prev, prevValue = w, value
	}
}

// addWriteRead links the writer of the version a read observed to the
// reader.
func (c *checker) addWriteRead(r read) {
	if r.external == 0 {
		return
	}
	value := r.list[r.external-1]
	if w := c.writer(r.key, value); w >= 0 {
		c.graph.add(Dependency{Kind: WR, From: w, To: r.txn, Key: r.key, Version: value})
	}
}

// addReadWrite links a reader to the writer of the version that came next
// after the one it observed: the reader did not see that write, so it
// must precede it.
func (c *checker) addReadWrite(r read) {
	order := c.orders[r.key]
	dep := Dependency{Kind: RW, From: r.txn, Key: r.key, Initial: r.external == 0}
	if !dep.Initial {
		dep.Version = r.list[r.external-1]
	}
	for _, value := range order[r.external:] {
		w := c.writer(r.key, value)
		if w < 0 {
			continue
		}
		if w != r.txn {
			dep.To, dep.Successor = w, value
			c.graph.add(dep)
		}
		return
	}
}

// checkCycles finds the strongly connected components of the whole graph
// and, in each, the worst cycles it holds.
func (c *checker) checkCycles() {
	sccs, _ := subgraph{g: c.graph, mask: WW | WR | RW}.components()
	for _, scc := range sccs {
		component := c.graph.induced(scc)
		c.findWriteCycles(component, WW, G0)
		c.findWriteCycles(component, WW|WR, G1c)
		if !c.findReadSkew(component) {
			c.findWriteSkew(component)
		}
	}
}

// findWriteCycles reports one shortest cycle of each component of the
// mask's edges. For G1c (mask ww|wr) the cycle must hold a wr edge; a
// ww-only one is G0's.
func (c *checker) findWriteCycles(g *graph, mask DepKind, a Anomaly) {
	sccs, _ := subgraph{g: g, mask: mask}.components()
	through := mask &^ WW
	if through == 0 {
		through = WW
	}
	for _, scc := range sccs {
		sub := g.induced(scc)
		if cycle := shortestCycle(subgraph{g: sub, mask: mask}, through); cycle != nil {
			c.result.add(c.cycleExample(sub, a, cycle))
		}
	}
}

// findReadSkew reports a shortest cycle with exactly one rw edge: an rw
// edge u→v closed by a ww/wr path from v back to u. Unlike the other
// searches, an rw edge need not lie on such a cycle, so only cycles found
// count against cycleCandidates: stopping after failed tries could miss
// the one that exists.
func (c *checker) findReadSkew(g *graph) bool {
	writeOnly := subgraph{g: g, mask: WW | WR}
	_, comp := writeOnly.components()
	var best []Dependency
	tried := 0
	for node := range g.out {
		for _, dep := range g.out[node] {
			if dep.Kind != RW || comp[dep.To] < comp[dep.From] || tried >= cycleCandidates {
				continue
			}
			// Only nodes numbered at least as high as the reader can lie
			// on a ww/wr path back to it.
			floor := comp[dep.From]
			path := writeOnly.shortestPath(dep.To, dep.From, func(n int) bool { return comp[n] >= floor })
			if path == nil {
				continue
			}
			tried++
			if best == nil || len(path)+1 < len(best) {
				best = append([]Dependency{dep}, path...)
			}
		}
	}
	if best != nil {
		c.result.add(c.cycleExample(g, GSingle, best))
	}
	return best != nil
}

// findWriteSkew reports a shortest cycle through an rw edge; it runs only
// when no cycle of the component has exactly one rw edge, so this one
// has two or more.
func (c *checker) findWriteSkew(g *graph) {
	if cycle := shortestCycle(subgraph{g: g, mask: WW | WR | RW}, RW); cycle != nil {
		c.result.add(c.cycleExample(g, G2Item, cycle))
	}
}

// shortestCycle tries up to cycleCandidates edges of the kinds in
// through, closing each with a shortest path back in the view, and
// returns the shortest cycle found.
func shortestCycle(view subgraph, through DepKind) []Dependency {
	var best []Dependency
	tried := 0
	anyNode := func(int) bool { return true }
	for node := range view.g.out {
		for _, dep := range view.g.out[node] {
			if dep.Kind&through == 0 || tried >= cycleCandidates {
				continue
			}
			tried++
			path := view.shortestPath(dep.To, dep.From, anyNode)
			if path != nil && (best == nil || len(path)+1 < len(best)) {
				best = append([]Dependency{dep}, path...)
			}
		}
	}
	return best
}

// cycleExample turns a cycle of g's nodes into a report of IDs, with one
// line per edge.
func (c *checker) cycleExample(g *graph, a Anomaly, cycle []Dependency) Example {
	ex := Example{Anomaly: a}
	names := make([]string, 0, len(cycle)+1)
	lines := make([]string, 0, len(cycle))
	for _, dep := range cycle {
		dep.From, dep.To = c.history[g.position(dep.From)].ID, c.history[g.position(dep.To)].ID
		ex.Cycle = append(ex.Cycle, dep)
		ex.Txns = append(ex.Txns, dep.From)
		names = append(names, fmt.Sprintf("T%d", dep.From))
		lines = append(lines, "  "+explainDependency(dep))
	}
	names = append(names, names[0])
	verdict := "forbids"
	if !a.Forbidden() {
		verdict = "allows"
	}
	ex.Explanation = fmt.Sprintf("%s: %s\n%s\nEach edge says its left transaction must come before its right one, "+
		"so no serial order explains what they saw; snapshot isolation %s this.",
		a, strings.Join(names, " → "), strings.Join(lines, "\n"), verdict)
	return ex
}

func explainDependency(dep Dependency) string {
	switch dep.Kind {
	case WW:
		return fmt.Sprintf("T%d appended %d to key %d, and T%d's append of %d came right after it (ww)",
			dep.From, dep.Version, dep.Key, dep.To, dep.Successor)
	case WR:
		return fmt.Sprintf("T%d appended %d to key %d, and T%d read the key ending in it (wr)",
			dep.From, dep.Version, dep.Key, dep.To)
	}
	seen := fmt.Sprintf("ending in %d", dep.Version)
	if dep.Initial {
		seen = "empty"
	}
	return fmt.Sprintf("T%d read key %d %s, without T%d's append of %d that came next (rw)",
		dep.From, dep.Key, seen, dep.To, dep.Successor)
}
