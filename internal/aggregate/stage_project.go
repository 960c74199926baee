package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// projectStage is $project: an inclusion projection (fields kept, plus
// computed ones) or an exclusion projection (fields dropped).
type projectStage struct {
	root      *projNode
	exclusion bool
}

// projMode tracks which kind of projection the spec has turned out to be.
type projMode struct {
	inclusion, exclusion bool
}

func parseProject(spec any, _ Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15969, "$project specification must be an object")
	}
	s, err := buildProjection(d)
	if err != nil {
		return nil, invalidProject(err)
	}
	return s, nil
}

// invalidProject adds MongoDB's "Invalid $project :: caused by ::" prefix.
func invalidProject(err error) error {
	me := mongoerr.As(err)
	return mongoerr.New(me.Code, "Invalid $project :: caused by :: "+me.Msg)
}

func buildProjection(d bson.D) (*projectStage, error) {
	if len(d) == 0 {
		return nil, mongoerr.New(mongoerr.Location51272, "projection specification must have at least one field")
	}
	root := newProjNode()
	var mode projMode
	if err := parseProjLevel(d, nil, root, &mode); err != nil {
		return nil, err
	}
	// Only _id decides when no other field does: {_id: 1} keeps just _id.
	idOnlyInclusion := root.children["_id"] != nil && root.children["_id"].include
	return &projectStage{root: root, exclusion: mode.exclusion || (!mode.inclusion && !idOnlyInclusion)}, nil
}

// parseProjLevel parses one level of spec under prefix.
func parseProjLevel(d bson.D, prefix []string, root *projNode, mode *projMode) error {
	for _, e := range d {
		parts, err := splitFieldPath(e.Key)
		if err != nil {
			return err
		}
		path := append(append([]string{}, prefix...), parts...)
		if sub, ok := e.Value.(bson.D); ok && !isOperatorDoc(sub) {
			if len(sub) == 0 {
				return mongoerr.Newf(mongoerr.Location51270, "An empty sub-projection is not a valid value. Found empty object at path")
			}
			if err := parseProjLevel(sub, path, root, mode); err != nil {
				return err
			}
			continue
		}
		leaf, err := projLeaf(e.Value, path, mode)
		if err != nil {
			return err
		}
		if err := root.insert(path, leaf); err != nil {
			return err
		}
	}
	return nil
}

// projLeaf classifies one value: numbers and booleans include or exclude,
// anything else is an expression computing the field.
func projLeaf(v any, path []string, mode *projMode) (*projNode, error) {
	isID := len(path) == 1 && path[0] == "_id"
	name := joinPath(path)
	switch v.(type) {
	case bool, int32, int64, float64, bson.Decimal128, int:
		if expr.Truthy(v) {
			return &projNode{include: true}, mode.setInclusion(name, isID)
		}
		return &projNode{exclude: true}, mode.setExclusion(name, isID)
	}
	e, err := expr.Compile(v)
	if err != nil {
		return nil, err
	}
	return &projNode{computed: e}, mode.setInclusion(name, false)
}

func (m *projMode) setInclusion(name string, isID bool) error {
	if isID {
		return nil
	}
	if m.exclusion {
		return mongoerr.Newf(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", name)
	}
	m.inclusion = true
	return nil
}

func (m *projMode) setExclusion(name string, isID bool) error {
	if isID {
		return nil
	}
	if m.inclusion {
		return mongoerr.Newf(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", name)
	}
	m.exclusion = true
	return nil
}

func joinPath(p []string) string { return strings.Join(p, ".") }

func (s *projectStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	return &mapIter{in: in, name: "$project", f: oneToOne(func(d bson.D) (bson.D, error) {
		if s.exclusion {
			return s.root.applyExclusion(d), nil
		}
		return s.root.applyInclusion(d, &evalCtx{root: d, vars: rc.variables()}, true)
	})}, nil
}

// applyInclusion keeps the included fields of d in d's order, then adds
// computed fields in spec order. At the top level _id is kept unless
// excluded.
func (n *projNode) applyInclusion(d bson.D, c *evalCtx, top bool) (bson.D, error) {
	out := bson.D{}
	for _, e := range d {
		child, ok := n.children[e.Key]
		if !ok {
			if top && e.Key == "_id" {
				out = append(out, e)
			}
			continue
		}
		if child.include {
			out = append(out, e)
		} else if !child.isLeaf() {
			if v, keep, err := child.includeValue(e.Value, c); err != nil {
				return nil, err
			} else if keep {
				out = append(out, bson.E{Key: e.Key, Value: v})
			}
		}
	}
	return n.addComputed(out, d, c)
}

// addComputed appends computed leaves, and computed subtrees whose field
// the input lacks.
func (n *projNode) addComputed(out, in bson.D, c *evalCtx) (bson.D, error) {
	for _, k := range n.order {
		child := n.children[k]
		if child.computed != nil {
			v, err := c.eval(child.computed)
			if err != nil {
				return nil, err
			}
			if !expr.IsMissing(v) {
				out = bsonutil.WithField(out, k, v)
			}
			continue
		}
		if _, present := field(in, k); !present && !child.isLeaf() && child.hasComputed() {
			sub, err := child.applyInclusion(bson.D{}, c, false)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: k, Value: sub})
		}
	}
	return out, nil
}

// includeValue projects the value of a field that has sub-paths.
func (n *projNode) includeValue(v any, c *evalCtx) (any, bool, error) {
	switch x := v.(type) {
	case bson.D:
		out, err := n.applyInclusion(x, c, false)
		return out, true, err
	case bson.A:
		out := bson.A{}
		for _, el := range x {
			if pv, keep, err := n.includeValue(el, c); err != nil {
				return nil, false, err
			} else if keep {
				out = append(out, pv)
			}
		}
		return out, true, nil
	}
	if n.hasComputed() {
		out, err := n.applyInclusion(bson.D{}, c, false)
		return out, true, err
	}
	return nil, false, nil
}

// applyExclusion drops the excluded paths of d.
func (n *projNode) applyExclusion(d bson.D) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		child, ok := n.children[e.Key]
		switch {
		case !ok || child.include:
			out = append(out, e)
		case child.exclude:
		default:
			out = append(out, bson.E{Key: e.Key, Value: child.excludeValue(e.Value)})
		}
	}
	return out
}

func (n *projNode) excludeValue(v any) any {
	switch x := v.(type) {
	case bson.D:
		return n.applyExclusion(x)
	case bson.A:
		out := make(bson.A, len(x))
		for i, el := range x {
			out[i] = n.excludeValue(el)
		}
		return out
	}
	return v
}
