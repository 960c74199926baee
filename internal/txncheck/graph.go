package txncheck

// graph is the dependency graph over a history's transactions, indexed by
// position in the history, or a part of it renumbered from 0 (origin then
// maps its nodes back to positions). A Dependency's From and To are node
// numbers here and become IDs only in reports.
type graph struct {
	out    [][]Dependency
	seen   map[edgeKey]bool
	origin []int
}

// edgeKey identifies an edge for deduplication: two reads of one version
// give one edge.
type edgeKey struct {
	from, to int
	kind     DepKind
}

func newGraph(nodes int) *graph {
	return &graph{out: make([][]Dependency, nodes), seen: map[edgeKey]bool{}}
}

func (g *graph) add(dep Dependency) {
	k := edgeKey{dep.From, dep.To, dep.Kind}
	if dep.From == dep.To || g.seen[k] {
		return
	}
	g.seen[k] = true
	g.out[dep.From] = append(g.out[dep.From], dep)
}

// position maps a node back to its transaction's place in the history.
func (g *graph) position(node int) int {
	if g.origin == nil {
		return node
	}
	return g.origin[node]
}

// induced is the part of the graph on members, renumbered 0..len-1, so
// the searches inside one component cost its size, not the history's.
func (g *graph) induced(members []int) *graph {
	local := make(map[int]int, len(members))
	sub := &graph{out: make([][]Dependency, len(members)), origin: make([]int, len(members))}
	for i, node := range members {
		local[node] = i
		sub.origin[i] = g.position(node)
	}
	for i, node := range members {
		for _, dep := range g.out[node] {
			if to, ok := local[dep.To]; ok {
				dep.From, dep.To = i, to
				sub.out[i] = append(sub.out[i], dep)
			}
		}
	}
	return sub
}

// subgraph is a view of the graph: the edges of the kinds in mask.
type subgraph struct {
	g    *graph
	mask DepKind
}

// edges calls visit with each of node's edges inside the view.
func (s subgraph) edges(node int, visit func(Dependency)) {
	for _, dep := range s.g.out[node] {
		if dep.Kind&s.mask != 0 {
			visit(dep)
		}
	}
}

// components runs Tarjan's algorithm over the view. It returns the
// strongly connected components of two or more nodes, and every node's
// component number. Tarjan numbers components in
// reverse topological order, so an edge between two components always
// goes from the higher number to the lower: a path from a to b needs
// comp[a] >= comp[b].
func (s subgraph) components() (sccs [][]int, comp []int) {
	t := &tarjan{view: s, index: make([]int, len(s.g.out)), low: make([]int, len(s.g.out)),
		onStack: make([]bool, len(s.g.out)), comp: make([]int, len(s.g.out))}
	for node := range s.g.out {
		t.index[node] = -1
	}
	for node := range s.g.out {
		if t.index[node] < 0 {
			t.visit(node)
		}
	}
	return t.sccs, t.comp
}

type tarjan struct {
	view     subgraph
	index    []int
	low      []int
	onStack  []bool
	stack    []int
	next     int
	comp     []int
	numbered int
	sccs     [][]int
}

func (t *tarjan) visit(node int) {
	t.index[node], t.low[node] = t.next, t.next
	t.next++
	t.stack = append(t.stack, node)
	t.onStack[node] = true
	t.view.edges(node, func(dep Dependency) {
		switch {
		case t.index[dep.To] < 0:
			t.visit(dep.To)
			t.low[node] = min(t.low[node], t.low[dep.To])
		case t.onStack[dep.To]:
			t.low[node] = min(t.low[node], t.index[dep.To])
		}
	})
	if t.low[node] == t.index[node] {
		t.pop(node)
	}
}

// pop takes node's component off the stack and numbers it.
func (t *tarjan) pop(root int) {
	var members []int
	for {
		top := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.onStack[top] = false
		t.comp[top] = t.numbered
		members = append(members, top)
		if top == root {
			break
		}
	}
	t.numbered++
	if len(members) > 1 {
		t.sccs = append(t.sccs, members)
	}
}

// shortestPath is a breadth-first search in the view from one node to
// another over nodes that pass allowed; it returns the edges of a
// shortest path, or nil when there is none.
func (s subgraph) shortestPath(from, to int, allowed func(int) bool) []Dependency {
	via := map[int]Dependency{from: {}}
	queue := []int{from}
	for len(queue) > 0 && !hasKey(via, to) {
		node := queue[0]
		queue = queue[1:]
		s.edges(node, func(dep Dependency) {
			if hasKey(via, dep.To) || !allowed(dep.To) {
				return
			}
			via[dep.To] = dep
			queue = append(queue, dep.To)
		})
	}
	if !hasKey(via, to) {
		return nil
	}
	var path []Dependency
	for node := to; node != from; node = via[node].From {
		path = append(path, via[node])
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

func hasKey(m map[int]Dependency, k int) bool {
	_, ok := m[k]
	return ok
}
