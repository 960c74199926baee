package update

import (
	"slices"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// node is one vertex of the parsed update tree. Internal vertices are
// objNode (named children) and arrNode ($[...] children); leaves carry an
// operator.
type node interface {
	apply(a *applier, st *state) error
}

type namedNode struct {
	name string
	node node
}

// objNode holds children in MongoDB's application order (comparePaths) and,
// separately, the child for the positional "$", whose name is only known
// once the query has matched.
type objNode struct {
	children   []namedNode
	positional node
	// first is the children's array while there is one: most updates
	// set one field per level, and the root is made with the Update.
	first [1]namedNode
}

// arrNode holds children keyed by array filter identifier; "" is $[].
type arrNode struct {
	children []namedNode
}

// placeholder occupies a $rename source path so that other operators on it
// conflict at parse time; it does nothing when applied.
type placeholder struct{}

func (placeholder) apply(*applier, *state) error { return nil }

func findChild(children []namedNode, name string) (int, bool) {
	return slices.BinarySearchFunc(children, name, func(c namedNode, n string) int {
		return comparePaths(c.name, n)
	})
}

func (n *objNode) child(name string) node {
	if isPositional(name) {
		return n.positional
	}
	if i, ok := findChild(n.children, name); ok {
		return n.children[i].node
	}
	return nil
}

func (n *objNode) setChild(name string, c node) {
	if isPositional(name) {
		n.positional = c
		return
	}
	if n.children == nil {
		n.children = n.first[:0]
	}
	n.children = insertChild(n.children, name, c)
}

func (n *arrNode) child(id string) node {
	if i, ok := findChild(n.children, id); ok {
		return n.children[i].node
	}
	return nil
}

func (n *arrNode) setChild(id string, c node) {
	n.children = insertChild(n.children, id, c)
}

func insertChild(children []namedNode, name string, c node) []namedNode {
	i, _ := findChild(children, name)
	return slices.Insert(children, i, namedNode{name: name, node: c})
}

// mergeNodes combines two subtrees that apply to the same element, as
// happens when "a.$" meets "a.0" or two array filters select one element.
// Two leaves (or a leaf and a subtree) at one place conflict.
func mergeNodes(left, right node, path []string) (node, error) {
	switch l := left.(type) {
	case *objNode:
		if r, ok := right.(*objNode); ok {
			return mergeObj(l, r, path)
		}
	case *arrNode:
		if r, ok := right.(*arrNode); ok {
			return mergeArr(l, r, path)
		}
	}
	return nil, errf(mongoerr.ConflictingUpdateOperators,
		"Update created a conflict at '%s'", joinPath(path))
}

func mergeObj(l, r *objNode, path []string) (node, error) {
	children, err := mergeChildren(l.children, r.children, path, func(s string) string { return s })
	if err != nil {
		return nil, err
	}
	pos, err := mergeOptional(l.positional, r.positional, append(clip(path), "$"))
	return &objNode{children: children, positional: pos}, err
}

func mergeArr(l, r *arrNode, path []string) (node, error) {
	children, err := mergeChildren(l.children, r.children, path, func(id string) string {
		return "$[" + id + "]"
	})
	return &arrNode{children: children}, err
}

func mergeOptional(l, r node, path []string) (node, error) {
	switch {
	case l == nil:
		return r, nil
	case r == nil:
		return l, nil
	}
	return mergeNodes(l, r, path)
}

// mergeChildren unions two sorted child lists, merging same-named children.
func mergeChildren(l, r []namedNode, path []string, part func(string) string) ([]namedNode, error) {
	out := slices.Clone(l)
	for _, c := range r {
		i, ok := findChild(out, c.name)
		if !ok {
			out = slices.Insert(out, i, c)
			continue
		}
		merged, err := mergeNodes(out[i].node, c.node, append(clip(path), part(c.name)))
		if err != nil {
			return nil, err
		}
		out[i].node = merged
	}
	return out, nil
}

// clip returns s with no spare capacity, so appending copies.
func clip(s []string) []string { return s[:len(s):len(s)] }
