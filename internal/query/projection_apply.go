package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Error codes of the positional projection at run time. The command
// layer prefixes their messages with "Executor error during find command
// :: caused by :: " as MongoDB does.
const (
	codePositionalNoMatch  = mongoerr.Location51246
	codePositionalMismatch = mongoerr.Location51247
)

// Apply projects doc. positional is the array index the query matched, as
// Filter.MatchPositional returns it (-1 when none); only a positional
// projection ("a.$") uses it. The result may share values with doc, so
// neither should be modified afterwards. An empty projection returns doc
// itself.
//
// As in MongoDB 4.4+, an inclusion projection keeps the document's field
// order for copied fields and appends computed ones ($slice, $elemMatch,
// "a.$", expressions) after them, in projection order.
func (p *Projection) Apply(doc bson.D, positional int) (bson.D, error) {
	if p.empty {
		return doc, nil
	}
	a := applier{root: doc, pos: positional}
	if p.inclusion {
		return a.include(p.root, doc)
	}
	return a.exclude(p.root, doc)
}

// applier carries what every level of a projection needs.
type applier struct {
	root bson.D // expressions see the whole document
	pos  int
}

func (a *applier) include(n *projNode, doc bson.D) (bson.D, error) {
	out := bson.D{}
	for _, e := range doc {
		f := n.find(e.Key)
		if f == nil || f.computed() || f.kind == projExclude {
			continue
		}
		if f.kind == projInclude {
			out = append(out, e)
			continue
		}
		v, keep, err := a.includeValue(f.sub, e.Value)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, bson.E{Key: e.Key, Value: v})
		}
	}
	return a.appendComputed(n, doc, out)
}

// includeValue projects the value under a nested inclusion: documents are
// projected, arrays element by element (dropping scalars), and scalars are
// dropped, unless the level computes expressions, which then build a new
// document in their place, as in MongoDB.
func (a *applier) includeValue(n *projNode, v any) (any, bool, error) {
	if d, ok := asDoc(v); ok {
		out, err := a.include(n, d)
		return out, true, err
	}
	arr, ok := asArray(v)
	if !ok {
		if !n.hasExprs() {
			return nil, false, nil
		}
		out, err := a.include(n, bson.D{})
		return out, true, err
	}
	if n.hasPositional() {
		return nil, false, mongoerr.New(codePositionalMismatch, "positional operator '.$' element mismatch")
	}
	out := make(bson.A, 0, len(arr))
	for _, e := range arr {
		pv, keep, err := a.includeValue(n, e)
		if err != nil {
			return nil, false, err
		}
		if keep {
			out = append(out, pv)
		}
	}
	return out, true, nil
}

// appendComputed adds the level's computed fields, and the nested levels
// with expressions whose field the document lacks.
func (a *applier) appendComputed(n *projNode, doc, out bson.D) (bson.D, error) {
	for _, f := range n.fields {
		var v any
		var ok bool
		var err error
		switch {
		case f.computed():
			v, ok, err = a.compute(f, doc)
		case f.kind == projSub && f.sub.hasExprs() && !hasField(doc, f.name):
			v, err = a.include(f.sub, bson.D{})
			ok = true
		}
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, bson.E{Key: f.name, Value: v})
		}
	}
	return out, nil
}

func hasField(doc bson.D, name string) bool {
	_, ok := bsonutil.Lookup(doc, name)
	return ok
}

// compute evaluates a computed field at the level of doc; ok is false
// when the field is to be left out.
func (a *applier) compute(f *projField, doc bson.D) (any, bool, error) {
	v, found := bsonutil.Lookup(doc, f.name)
	switch f.kind {
	case projSlice:
		return sliceValue(v, f.slice), found, nil
	case projElemMatch:
		return elemMatchValue(f.match, doc, v)
	case projPositional:
		return a.positionalValue(v, found)
	}
	x, err := f.expr.Eval(a.root, nil)
	if err != nil {
		return nil, false, err
	}
	return x, !expr.IsMissing(x), nil
}

func sliceValue(v any, s sliceSpec) any {
	arr, ok := asArray(v)
	if !ok {
		return v
	}
	n := len(arr)
	start, end := 0, n
	switch {
	case s.hasSkip && s.skip < 0:
		start = max(0, n+s.skip)
		end = min(n, start+s.limit)
	case s.hasSkip:
		start = min(n, s.skip)
		end = min(n, start+s.limit)
	case s.limit >= 0:
		end = min(n, s.limit)
	default:
		start = max(0, n+s.limit)
	}
	return arr[start:end:end]
}

// elemMatchValue returns [first element matching], or leaves the field out.
func elemMatchValue(f *Filter, doc bson.D, v any) (any, bool, error) {
	ok, idx := f.MatchPositional(doc)
	arr, isArr := asArray(v)
	if !ok || !isArr || idx < 0 || idx >= len(arr) {
		return nil, false, nil
	}
	return bson.A{arr[idx]}, true, nil
}

func (a *applier) positionalValue(v any, found bool) (any, bool, error) {
	arr, isArr := asArray(v)
	if !isArr {
		return v, found, nil
	}
	if a.pos < 0 || a.pos >= len(arr) {
		return nil, false, mongoerr.New(codePositionalNoMatch,
			"positional operator '.$' couldn't find a matching element in the array")
	}
	return bson.A{arr[a.pos]}, true, nil
}

func (a *applier) exclude(n *projNode, doc bson.D) (bson.D, error) {
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		f := n.find(e.Key)
		var v any = e.Value
		keep := true
		var err error
		switch {
		case f == nil, f.kind == projInclude:
		case f.kind == projExclude:
			keep = false
		case f.kind == projSub:
			v, err = a.excludeValue(f.sub, e.Value)
		default:
			v, keep, err = a.compute(f, doc)
		}
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, bson.E{Key: e.Key, Value: v})
		}
	}
	return out, nil
}

// excludeValue projects the value under a nested exclusion: documents and
// arrays (element by element) are projected, anything else is kept.
func (a *applier) excludeValue(n *projNode, v any) (any, error) {
	if d, ok := asDoc(v); ok {
		return a.exclude(n, d)
	}
	arr, ok := asArray(v)
	if !ok {
		return v, nil
	}
	out := make(bson.A, len(arr))
	for i, e := range arr {
		pv, err := a.excludeValue(n, e)
		if err != nil {
			return nil, err
		}
		out[i] = pv
	}
	return out, nil
}

// hasExprs reports whether the level, or one below it, computes an
// aggregation expression.
func (n *projNode) hasExprs() bool {
	return n.any(func(f *projField) bool { return f.kind == projExpr })
}

func (n *projNode) hasPositional() bool {
	return n.any(func(f *projField) bool { return f.kind == projPositional })
}

func (n *projNode) any(pred func(*projField) bool) bool {
	for _, f := range n.fields {
		if pred(f) || (f.kind == projSub && f.sub.any(pred)) {
			return true
		}
	}
	return false
}
