package docstore

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// clause is one AND-ed condition of a filter in MongoDB's parsed form:
// {path: {op: val}}, or {op: val} for a top-level operator such as $or.
type clause struct {
	path string
	op   query.Op
	val  any
}

func (c clause) doc() bson.D {
	if c.path == "" {
		return bson.D{{Key: string(c.op), Value: c.val}}
	}
	return bson.D{{Key: c.path, Value: c.opDoc()}}
}

// opDoc renders a regex as MongoDB's parsed query does: {$regex, $options}.
func (c clause) opDoc() bson.D {
	re, ok := c.val.(bson.Regex)
	if c.op != "$regex" || !ok {
		return bson.D{{Key: string(c.op), Value: c.val}}
	}
	d := bson.D{{Key: "$regex", Value: re.Pattern}}
	if re.Options != "" {
		d = append(d, bson.E{Key: "$options", Value: re.Options})
	}
	return d
}

// normalizeFilter splits a filter into its AND-ed clauses, flattening
// $and and writing implicit equalities as $eq, as explain's parsedQuery
// does. MongoDB also reorders the clauses; Mayfly keeps filter order.
func normalizeFilter(spec bson.D) []clause {
	var out []clause
	for _, e := range spec {
		out = append(out, normalizeElem(e)...)
	}
	return out
}

func normalizeElem(e bson.E) []clause {
	switch {
	case e.Key == "$and":
		return normalizeAnd(e.Value)
	case e.Key == "$comment":
		return nil
	case strings.HasPrefix(e.Key, "$"):
		return []clause{{op: query.Op(e.Key), val: e.Value}}
	}
	if re, ok := e.Value.(bson.Regex); ok {
		return []clause{{path: e.Key, op: "$regex", val: re}}
	}
	if ops, ok := e.Value.(bson.D); ok && len(ops) > 0 && strings.HasPrefix(ops[0].Key, "$") {
		return normalizeOps(e.Key, ops)
	}
	return []clause{{path: e.Key, op: "$eq", val: e.Value}}
}

// equalityClause is normalizeElem's one clause for e when e is an
// implicit equality {path: v}, made without normalizeElem's slice.
func equalityClause(e bson.E) (clause, bool) {
	if strings.HasPrefix(e.Key, "$") {
		return clause{}, false
	}
	switch v := e.Value.(type) {
	case bson.Regex:
		return clause{}, false
	case bson.D:
		if len(v) > 0 && strings.HasPrefix(v[0].Key, "$") {
			return clause{}, false
		}
	}
	return clause{path: e.Key, op: "$eq", val: e.Value}, true
}

func normalizeAnd(v any) []clause {
	var out []clause
	for _, sub := range bsonutil.ToA(v) {
		out = append(out, normalizeFilter(bsonutil.ToD(sub))...)
	}
	return out
}

// normalizeOps gives each operator of {path: {$op: v, ...}} its own clause;
// $regex takes its sibling $options along.
func normalizeOps(path string, ops bson.D) []clause {
	var out []clause
	for _, op := range ops {
		switch op.Key {
		case "$options":
			continue
		case "$regex":
			out = append(out, clause{path: path, op: "$regex", val: regexOf(op.Value, ops)})
		default:
			out = append(out, clause{path: path, op: query.Op(op.Key), val: op.Value})
		}
	}
	return out
}

func regexOf(v any, ops bson.D) bson.Regex {
	if re, ok := v.(bson.Regex); ok {
		return re
	}
	pattern, _ := v.(string)
	opts, _ := bsonutil.Lookup(ops, "$options")
	o, _ := opts.(string)
	return bson.Regex{Pattern: pattern, Options: o}
}

// ParsedQuery renders f as explain's queryPlanner.parsedQuery: {} for no
// filter, the single clause, or {$and: [clauses]}.
func ParsedQuery(f *query.Filter) bson.D {
	if f == nil {
		return bson.D{}
	}
	return clausesDoc(normalizeFilter(f.Spec()))
}

func clausesDoc(cs []clause) bson.D {
	switch len(cs) {
	case 0:
		return bson.D{}
	case 1:
		return cs[0].doc()
	}
	all := make(bson.A, 0, len(cs))
	for _, c := range cs {
		all = append(all, c.doc())
	}
	return bson.D{{Key: "$and", Value: all}}
}

// residual is the part of the filter the index bounds do not apply
// exactly, which explain shows as the FETCH stage's filter. Mayfly's FETCH
// rechecks the whole filter; the difference is only in what is shown.
func (p *Plan) residual(f *query.Filter) bson.D {
	if f == nil {
		return bson.D{}
	}
	var rest []clause
	for _, c := range normalizeFilter(f.Spec()) {
		if !p.coversClause(c) {
			rest = append(rest, c)
		}
	}
	return clausesDoc(rest)
}

// hasResidual reports whether residual(f) is not empty, without building
// it: a write asks this of its plan on every call (CandidateIDs), and its
// filter is most often equalities, which need no clause slices.
func (p *Plan) hasResidual(f *query.Filter) bool {
	if f == nil {
		return false
	}
	for _, e := range f.Spec() {
		if c, ok := equalityClause(e); ok {
			if !p.coversClause(c) {
				return true
			}
			continue
		}
		for _, c := range normalizeElem(e) {
			if !p.coversClause(c) {
				return true
			}
		}
	}
	return false
}

// coversClause: the bounds hold exactly the values the clause accepts.
// Null equality is never exact: its bounds also hold missing fields.
func (p *Plan) coversClause(c clause) bool {
	for _, q := range p.covered {
		if q.Path == c.path && q.Op == c.op && !anyNullish(q.Values) && sameOperand(q, c) {
			return true
		}
	}
	return false
}

func sameOperand(q query.Predicate, c clause) bool {
	if q.Op == "$in" {
		return len(bsonutil.ToA(c.val)) == len(q.Values)
	}
	return len(q.Values) == 1 && bsonutil.Compare(q.Values[0], c.val) == 0
}
