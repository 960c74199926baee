package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Projection is a parsed find() projection, following MongoDB 4.4+:
// inclusion or exclusion of (dotted) paths, _id included unless excluded,
// $slice, $elemMatch, the positional "a.$", and literal values and
// aggregation expressions as computed fields. It is immutable and safe for
// concurrent use.
type Projection struct {
	root      *projNode
	inclusion bool
	empty     bool
}

// projKind says what a projection field does.
type projKind int

const (
	projInclude    projKind = iota // {a: 1}
	projExclude                    // {a: 0}
	projSub                        // {a: {...}} or the parent of "a.b"
	projSlice                      // {a: {$slice: n}} / [skip, limit]
	projElemMatch                  // {a: {$elemMatch: {...}}}
	projPositional                 // {"a.$": 1}
	projExpr                       // {a: "literal"} / {a: {$op: ...}}
)

// projNode is one level of the projection tree, fields in spec order.
type projNode struct {
	fields []*projField
}

type projField struct {
	name  string
	kind  projKind
	sub   *projNode  // projSub
	slice sliceSpec  // projSlice
	match *Filter    // projElemMatch: {name: {$elemMatch: ...}}
	expr  *expr.Expr // projExpr
}

type sliceSpec struct {
	hasSkip     bool
	skip, limit int
}

// computed reports whether the field's value is computed rather than
// copied: MongoDB 4.4+ appends computed fields after the copied ones.
func (f *projField) computed() bool {
	return f.kind >= projSlice
}

func (n *projNode) find(name string) *projField {
	for _, f := range n.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// projType is the projection's kind while parsing: unknown until a field
// decides it.
type projType int

const (
	typeUnknown projType = iota
	typeInclusion
	typeExclusion
)

// projParser holds what parsing learns about the whole projection.
type projParser struct {
	typ           projType
	idSpecified   bool
	idIncluded    bool
	idExcluded    bool
	hasSlice      bool
	hasElemMatch  bool
	hasPositional bool
}

// NewProjection parses a find() projection. Errors are *mongoerr.Error
// values with MongoDB's codes and messages.
func NewProjection(spec bson.D) (*Projection, error) {
	p := &projParser{}
	root := &projNode{}
	for _, e := range spec {
		p.idSpecified = p.idSpecified || e.Key == "_id" || strings.HasPrefix(e.Key, "_id.")
		if err := p.element(root, e, true); err != nil {
			return nil, err
		}
	}
	p.settleType()
	if p.typ == typeInclusion && !p.idSpecified {
		root.fields = append(root.fields, &projField{name: "_id", kind: projInclude})
	}
	if p.typ == typeExclusion && p.idIncluded {
		root.remove("_id")
	}
	return &Projection{root: root, inclusion: p.typ == typeInclusion, empty: len(spec) == 0}, nil
}

func (n *projNode) remove(name string) {
	for i, f := range n.fields {
		if f.name == name {
			n.fields = append(n.fields[:i], n.fields[i+1:]...)
			return
		}
	}
}

// settleType decides the kind of a projection no field decided, with
// MongoDB's rules for projections of only _id, $slice and $elemMatch.
func (p *projParser) settleType() {
	switch {
	case p.typ != typeUnknown:
	case p.hasSlice && p.idIncluded:
		p.typ = typeInclusion
	case p.hasSlice:
		p.typ = typeExclusion
	case p.hasElemMatch || p.idIncluded:
		p.typ = typeInclusion
	default:
		p.typ = typeExclusion
	}
}

// IsInclusion reports whether the projection keeps only named fields
// (otherwise it removes named fields and keeps the rest).
func (p *Projection) IsInclusion() bool { return p.inclusion && !p.empty }

// element parses one projection field into node.
func (p *projParser) element(node *projNode, e bson.E, atRoot bool) error {
	if strings.Contains(e.Key, ".$.") {
		return mongoerr.New(codePositionalMiddle, positionalMiddleMsg)
	}
	positional := strings.HasSuffix(e.Key, ".$")
	if d, ok := asDoc(e.Value); ok {
		if positional {
			return mongoerr.New(mongoerr.Location31271, "positional projection cannot be used with an expression or sub object")
		}
		return p.subObject(node, e.Key, d, atRoot)
	}
	if bsonutil.IsNumber(e.Value) || isBool(e.Value) {
		if positional {
			return p.positional(node, e)
		}
		return p.inclusionOrExclusion(node, e, atRoot)
	}
	if positional {
		return mongoerr.New(mongoerr.Location31308, "positional projection cannot be used with a literal")
	}
	return p.literal(node, e)
}

const codePositionalMiddle = mongoerr.Location31394

const positionalMiddleMsg = "As of 4.4, it's illegal to specify positional operator in the middle of a path." +
	"Positional projection may only be used at the end, for example: a.b.$. If the query previously used a " +
	"form like a.b.$.d, remove the parts following the '$' and the results will be equivalent."

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

func (p *projParser) inclusionOrExclusion(node *projNode, e bson.E, atRoot bool) error {
	if err := validateFieldPath(e.Key); err != nil {
		return err
	}
	isID := atRoot && e.Key == "_id"
	include := trueValue(e.Value)
	kind := projExclude
	if include {
		kind = projInclude
	}
	if err := addAtPath(node, e.Key, &projField{kind: kind}); err != nil {
		return err
	}
	switch {
	case isID && include:
		p.idIncluded = true
	case isID:
		p.idExcluded = true
	case include:
		return p.setType(typeInclusion, e.Key)
	default:
		return p.setType(typeExclusion, e.Key)
	}
	return nil
}

// setType records the projection's kind, rejecting a mix.
func (p *projParser) setType(t projType, key string) error {
	if p.typ == typeExclusion && t == typeInclusion {
		return mongoerr.Newf(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", key)
	}
	if p.typ == typeInclusion && t == typeExclusion {
		return mongoerr.Newf(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", key)
	}
	p.typ = t
	return nil
}

// validateFieldPath applies MongoDB's FieldPath rules to a projection path.
func validateFieldPath(path string) error {
	if path == "" {
		return mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(path, ".") {
		return mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
		}
		if strings.HasPrefix(part, "$") {
			return mongoerr.New(mongoerr.Location16410,
				"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return nil
}

// addAtPath adds leaf under node at a dotted path, creating the
// intermediate levels, and rejects paths that collide.
func addAtPath(node *projNode, path string, leaf *projField) error {
	parts := strings.Split(path, ".")
	for i, part := range parts {
		existing := node.find(part)
		if i == len(parts)-1 {
			if existing != nil {
				return mongoerr.Newf(mongoerr.Location31250, "Path collision at %s", path)
			}
			leaf.name = part
			node.fields = append(node.fields, leaf)
			return nil
		}
		if existing == nil {
			existing = &projField{name: part, kind: projSub, sub: &projNode{}}
			node.fields = append(node.fields, existing)
		}
		if existing.kind != projSub {
			return mongoerr.Newf(mongoerr.Location31249, "Path collision at %s remaining portion %s", path, strings.Join(parts[1:], "."))
		}
		node = existing.sub
	}
	return nil
}
