package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Clause is one AND-ed condition of a filter in MongoDB's parsed form, as
// explain's parsedQuery shows it: {Path: {Op: Val}}, or {Op: Val} for a
// top-level operator such as $or.
type Clause struct {
	Path string
	Op   Op
	Val  any
}

func (c Clause) Doc() bson.D {
	if c.Path == "" {
		return bson.D{{Key: string(c.Op), Value: c.Val}}
	}
	return bson.D{{Key: c.Path, Value: c.opDoc()}}
}

// opDoc renders a regex as MongoDB's parsed query does: {$regex, $options}.
func (c Clause) opDoc() bson.D {
	re, ok := c.Val.(bson.Regex)
	if c.Op != "$regex" || !ok {
		return bson.D{{Key: string(c.Op), Value: c.Val}}
	}
	d := bson.D{{Key: "$regex", Value: re.Pattern}}
	if re.Options != "" {
		d = append(d, bson.E{Key: "$options", Value: re.Options})
	}
	return d
}

// NormalizeFilter splits a filter into its AND-ed clauses, flattening
// $and and writing implicit equalities as $eq, as explain's parsedQuery
// does. MongoDB also reorders the clauses; Mayfly keeps filter order.
func NormalizeFilter(spec bson.D) []Clause {
	var out []Clause
	for _, e := range spec {
		out = append(out, NormalizeElem(e)...)
	}
	return out
}

func NormalizeElem(e bson.E) []Clause {
	switch {
	case e.Key == "$and":
		return normalizeAnd(e.Value)
	case e.Key == "$comment":
		return nil
	case strings.HasPrefix(e.Key, "$"):
		return []Clause{{Op: Op(e.Key), Val: e.Value}}
	}
	if re, ok := e.Value.(bson.Regex); ok {
		return []Clause{{Path: e.Key, Op: "$regex", Val: re}}
	}
	if ops, ok := e.Value.(bson.D); ok && len(ops) > 0 && strings.HasPrefix(ops[0].Key, "$") {
		return normalizeOps(e.Key, ops)
	}
	return []Clause{{Path: e.Key, Op: "$eq", Val: e.Value}}
}

// EqualityClause is NormalizeElem's one clause for e when e is an
// implicit equality {path: v}, made without NormalizeElem's slice.
func EqualityClause(e bson.E) (Clause, bool) {
	if strings.HasPrefix(e.Key, "$") {
		return Clause{}, false
	}
	switch v := e.Value.(type) {
	case bson.Regex:
		return Clause{}, false
	case bson.D:
		if len(v) > 0 && strings.HasPrefix(v[0].Key, "$") {
			return Clause{}, false
		}
	}
	return Clause{Path: e.Key, Op: "$eq", Val: e.Value}, true
}

func normalizeAnd(v any) []Clause {
	var out []Clause
	for _, sub := range bsonutil.ToA(v) {
		out = append(out, NormalizeFilter(bsonutil.ToD(sub))...)
	}
	return out
}

// normalizeOps gives each operator of {path: {$op: v, ...}} its own clause;
// $regex takes its sibling $options along.
func normalizeOps(path string, ops bson.D) []Clause {
	var out []Clause
	for _, op := range ops {
		switch op.Key {
		case "$options":
			continue
		case "$regex":
			out = append(out, Clause{Path: path, Op: "$regex", Val: regexOf(op.Value, ops)})
		default:
			out = append(out, Clause{Path: path, Op: Op(op.Key), Val: op.Value})
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
func ParsedQuery(f *Filter) bson.D {
	if f == nil {
		return bson.D{}
	}
	return ClausesDoc(NormalizeFilter(f.Spec()))
}

func ClausesDoc(cs []Clause) bson.D {
	switch len(cs) {
	case 0:
		return bson.D{}
	case 1:
		return cs[0].Doc()
	}
	all := make(bson.A, 0, len(cs))
	for _, c := range cs {
		all = append(all, c.Doc())
	}
	return bson.D{{Key: "$and", Value: all}}
}
