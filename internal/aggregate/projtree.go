package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// projNode is one level of a $project, $addFields or $unset spec, with
// dotted paths and nested documents folded into a tree.
type projNode struct {
	children map[string]*projNode
	order    []string // child names in spec order
	include  bool
	exclude  bool
	computed *expr.Expr
}

func newProjNode() *projNode { return &projNode{children: map[string]*projNode{}} }

func (n *projNode) isLeaf() bool { return n.include || n.exclude || n.computed != nil }

// hasComputed reports whether the subtree computes any field.
func (n *projNode) hasComputed() bool {
	if n.computed != nil {
		return true
	}
	for _, c := range n.children {
		if c.hasComputed() {
			return true
		}
	}
	return false
}

// insert adds a leaf at path, failing on MongoDB's path collisions.
func (n *projNode) insert(path []string, leaf *projNode) error {
	cur := n
	for i, part := range path[:len(path)-1] {
		next, ok := cur.children[part]
		if ok && next.isLeaf() {
			return mongoerr.Newf(mongoerr.Location31249, "Path collision at %s remaining portion %s",
				strings.Join(path, "."), strings.Join(path[i+1:], "."))
		}
		if !ok {
			next = newProjNode()
			cur.add(part, next)
		}
		cur = next
	}
	last := path[len(path)-1]
	if _, ok := cur.children[last]; ok {
		return mongoerr.Newf(mongoerr.Location31250, "Path collision at %s", strings.Join(path, "."))
	}
	cur.add(last, leaf)
	return nil
}

func (n *projNode) add(name string, child *projNode) {
	n.children[name] = child
	n.order = append(n.order, name)
}

// splitFieldPath validates a spec key and splits it on dots.
func splitFieldPath(key string) ([]string, error) {
	if key == "" {
		return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(key, ".") {
		return nil, mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	parts := splitPath(key)
	for _, p := range parts {
		if p == "" {
			return nil, mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
		}
		if strings.HasPrefix(p, "$") {
			return nil, mongoerr.New(mongoerr.Location16410,
				"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// isOperatorDoc reports whether v is an expression document {$op: ...}.
func isOperatorDoc(v any) bool {
	d, ok := v.(bson.D)
	return ok && len(d) > 0 && strings.HasPrefix(d[0].Key, "$")
}

// evalCtx carries what leaf expressions need: the document being
// transformed (their $$ROOT) and the run's variables.
type evalCtx struct {
	root bson.D
	vars map[string]any
}

func (c *evalCtx) eval(e *expr.Expr) (any, error) { return e.Eval(c.root, c.vars) }
