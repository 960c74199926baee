package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// addFieldsStage is $addFields (alias $set): every leaf is an expression
// whose value replaces or adds a field; nested documents in the spec add
// to the existing embedded document rather than replacing it.
type addFieldsStage struct {
	name string
	root *projNode
}

func parseAddFields(name string) stageParser {
	return func(spec any, _ Options) (stage, error) {
		d, ok := spec.(bson.D)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location40272, "%s specification stage must be an object, got %s",
				name, typeNameOf(spec))
		}
		root := newProjNode()
		if err := parseAddLevel(d, nil, root); err != nil {
			return nil, err
		}
		return &addFieldsStage{name: name, root: root}, nil
	}
}

func parseAddLevel(d bson.D, prefix []string, root *projNode) error {
	for _, e := range d {
		parts, err := splitFieldPath(e.Key)
		if err != nil {
			return err
		}
		path := append(append([]string{}, prefix...), parts...)
		if sub, ok := e.Value.(bson.D); ok && len(sub) > 0 && !isOperatorDoc(sub) {
			if err := parseAddLevel(sub, path, root); err != nil {
				return err
			}
			continue
		}
		x, err := expr.Compile(e.Value)
		if err != nil {
			return err
		}
		if err := root.insert(path, &projNode{computed: x}); err != nil {
			return err
		}
	}
	return nil
}

func (s *addFieldsStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	return &mapIter{in: in, name: s.name, f: oneToOne(func(d bson.D) (bson.D, error) {
		return s.root.applyAdd(d, &evalCtx{root: d, vars: rc.variables()})
	})}, nil
}

// applyAdd sets the computed fields on a copy of d; a computed value that
// is missing ($$REMOVE, an absent path) removes the field.
func (n *projNode) applyAdd(d bson.D, c *evalCtx) (bson.D, error) {
	out := append(bson.D{}, d...)
	for _, k := range n.order {
		child := n.children[k]
		if child.computed != nil {
			v, err := c.eval(child.computed)
			if err != nil {
				return nil, err
			}
			if expr.IsMissing(v) {
				out = bsonutil.WithoutField(out, k)
			} else {
				out = bsonutil.WithField(out, k, v)
			}
			continue
		}
		cur, _ := field(out, k)
		v, err := child.addValue(cur, c)
		if err != nil {
			return nil, err
		}
		out = bsonutil.WithField(out, k, v)
	}
	return out, nil
}

// addValue applies a subtree to a field's current value: into documents,
// into each element of arrays, and onto a fresh document otherwise.
func (n *projNode) addValue(v any, c *evalCtx) (any, error) {
	switch x := v.(type) {
	case bson.D:
		return n.applyAdd(x, c)
	case bson.A:
		out := make(bson.A, len(x))
		for i, el := range x {
			pv, err := n.addValue(el, c)
			if err != nil {
				return nil, err
			}
			out[i] = pv
		}
		return out, nil
	}
	return n.applyAdd(bson.D{}, c)
}

// unsetStage is $unset: an exclusion projection of the listed paths.
type unsetStage struct{ root *projNode }

func parseUnset(spec any, _ Options) (stage, error) {
	var paths []string
	switch x := spec.(type) {
	case string:
		paths = []string{x}
	case bson.A:
		if len(x) == 0 {
			return nil, mongoerr.New(mongoerr.Location31119, "$unset specification must be a string or an array with at least one field")
		}
		for _, p := range x {
			s, ok := p.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.Location31120, "$unset specification must be a string or an array containing only string values")
			}
			paths = append(paths, s)
		}
	default:
		return nil, mongoerr.New(mongoerr.Location31002, "$unset specification must be a string or an array")
	}
	return buildUnset(paths)
}

func buildUnset(paths []string) (stage, error) {
	root := newProjNode()
	for _, p := range paths {
		parts, err := splitFieldPath(p)
		if err != nil {
			return nil, err
		}
		if err := root.insert(parts, &projNode{exclude: true}); err != nil {
			return nil, err
		}
	}
	return &unsetStage{root: root}, nil
}

func (s *unsetStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	return &mapIter{in: in, name: "$unset", f: oneToOne(func(d bson.D) (bson.D, error) {
		return s.root.applyExclusion(d), nil
	})}, nil
}
