package aggregate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// groupStage is $group.
type groupStage struct {
	id     *expr.Expr
	idDoc  []groupField // _id given as {name: expr, ...}: one expression per field
	fields []groupField
}

// groupField is one output field: an accumulator over an expression.
type groupField struct {
	name string
	op   string
	arg  *expr.Expr
}

func parseGroup(spec any, _ Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15947, "a group's fields must be specified in an object")
	}
	g := &groupStage{}
	for _, e := range d {
		if e.Key == "_id" {
			if err := g.parseID(e.Value); err != nil {
				return nil, err
			}
			continue
		}
		f, err := parseGroupField(e)
		if err != nil {
			return nil, err
		}
		g.fields = append(g.fields, f)
	}
	if g.id == nil && g.idDoc == nil {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	return g, nil
}

// parseID compiles _id. A document of expressions is kept field by field
// so that a missing field becomes null in the key, as in MongoDB.
func (g *groupStage) parseID(v any) error {
	d, ok := v.(bson.D)
	if !ok || len(d) == 0 || isOperatorDoc(d) {
		id, err := expr.Compile(v)
		g.id = id
		return err
	}
	if _, err := expr.Compile(d); err != nil {
		return err
	}
	for _, e := range d {
		x, err := expr.Compile(e.Value)
		if err != nil {
			return err
		}
		g.idDoc = append(g.idDoc, groupField{name: e.Key, arg: x})
	}
	return nil
}

// evalID computes a document's group key; missing becomes null.
func (g *groupStage) evalID(doc bson.D, rc *runCtx) (any, error) {
	if g.idDoc == nil {
		id, err := g.id.Eval(doc, rc.variables())
		return nullIfMissing(id), err
	}
	out := make(bson.D, len(g.idDoc))
	for i, f := range g.idDoc {
		v, err := f.arg.Eval(doc, rc.variables())
		if err != nil {
			return nil, err
		}
		out[i] = bson.E{Key: f.name, Value: nullIfMissing(v)}
	}
	return out, nil
}

func nullIfMissing(v any) any {
	if expr.IsMissing(v) {
		return nil
	}
	return v
}

func parseGroupField(e bson.E) (groupField, error) {
	switch {
	case strings.Contains(e.Key, "."):
		return groupField{}, mongoerr.Newf(mongoerr.Location40235, "The field name '%s' cannot contain '.'", e.Key)
	case strings.HasPrefix(e.Key, "$"):
		return groupField{}, mongoerr.Newf(mongoerr.Location40236, "The field name '%s' cannot be an operator name", e.Key)
	}
	acc, ok := e.Value.(bson.D)
	if !ok {
		return groupField{}, mongoerr.Newf(mongoerr.Location40234, "The field '%s' must be an accumulator object", e.Key)
	}
	if len(acc) != 1 {
		return groupField{}, mongoerr.Newf(mongoerr.Location40238, "The field '%s' must specify one accumulator", e.Key)
	}
	return parseAccumulator(e.Key, acc[0])
}

// GroupAccumulatorNames lists every accumulator $group accepts, sorted:
// expr's and $count, which $group rewrites to {$sum: 1}.
func GroupAccumulatorNames() []string {
	return slices.Sorted(slices.Values(append(expr.AccumulatorNames(), "$count")))
}

func parseAccumulator(name string, acc bson.E) (groupField, error) {
	op := acc.Key
	if op == "$count" {
		if d, ok := acc.Value.(bson.D); !ok || len(d) != 0 {
			return groupField{}, mongoerr.New(mongoerr.BadValue, "$count takes no arguments, i.e. $count:{}")
		}
		one, _ := expr.Compile(int32(1))
		return groupField{name: name, op: "$sum", arg: one}, nil
	}
	if _, ok := expr.NewAccumulator(op); !ok {
		return groupField{}, mongoerr.Newf(mongoerr.Location15952, "unknown group operator '%s'", op)
	}
	if _, isArray := acc.Value.(bson.A); isArray {
		return groupField{}, mongoerr.Newf(mongoerr.Location40237, "The %s accumulator is a unary operator", op)
	}
	arg, err := expr.Compile(acc.Value)
	if err != nil {
		return groupField{}, err
	}
	return groupField{name: name, op: op, arg: arg}, nil
}

// group is the state of one group: its _id and accumulators.
type group struct {
	id   any
	accs []expr.Accumulator
}

func (g *groupStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	groups, err := g.accumulate(in, rc)
	if err != nil {
		return nil, err
	}
	docs := make([]bson.D, len(groups))
	for i, gr := range groups {
		docs[i] = g.output(gr)
	}
	return &sliceIter{docs: docs}, nil
}

// accumulate folds the input into groups, in first-seen order.
func (g *groupStage) accumulate(in Iterator, rc *runCtx) ([]*group, error) {
	defer in.Close()
	index := map[string]*group{}
	var order []*group
	var mem memTracker
	for {
		doc, ok, err := in.Next()
		if err != nil || !ok {
			return order, err
		}
		gr, size, err := g.groupFor(doc, rc, index)
		if err != nil {
			return nil, err
		}
		if size > 0 {
			order = append(order, gr)
		}
		added, err := g.fold(gr, doc, rc)
		if err != nil {
			return nil, err
		}
		if err := mem.add(size+added, rc, "$group"); err != nil {
			return nil, err
		}
	}
}

// groupFor finds or creates doc's group; size is the new group's memory
// estimate, or 0 if the group already existed.
func (g *groupStage) groupFor(doc bson.D, rc *runCtx, index map[string]*group) (*group, int64, error) {
	id, err := g.evalID(doc, rc)
	if err != nil {
		return nil, 0, fmt.Errorf("evaluating the $group _id: %w", err)
	}
	key := groupKey(id)
	if rc.opt.Collation != nil {
		key = groupKey(rc.opt.Collation.Value(id))
	}
	if gr, ok := index[key]; ok {
		return gr, 0, nil
	}
	gr := &group{id: id, accs: make([]expr.Accumulator, len(g.fields))}
	for i, f := range g.fields {
		gr.accs[i] = newAccumulator(f.op, rc.opt.Collation)
	}
	index[key] = gr
	return gr, int64(len(key)) + 64*int64(len(g.fields)+1), nil
}

// fold adds doc to gr's accumulators; it returns the bytes the values
// that accumulate ($push, $addToSet) now hold.
func (g *groupStage) fold(gr *group, doc bson.D, rc *runCtx) (int64, error) {
	var added int64
	for i, f := range g.fields {
		v, err := f.arg.Eval(doc, rc.variables())
		if err != nil {
			return 0, err
		}
		if err := gr.accs[i].Add(v); err != nil {
			return 0, err
		}
		if f.op == "$push" || f.op == "$addToSet" || f.op == "$mergeObjects" {
			added += approxSize(v)
		}
	}
	return added, nil
}

func (g *groupStage) output(gr *group) bson.D {
	out := make(bson.D, 0, len(g.fields)+1)
	out = append(out, bson.E{Key: "_id", Value: gr.id})
	for i, f := range g.fields {
		out = append(out, bson.E{Key: f.name, Value: gr.accs[i].Result()})
	}
	return out
}

// groupKey encodes a value so that values MongoDB considers equal (1,
// 1.0 and NumberLong(1); documents with equal fields) share a key.
func groupKey(v any) string {
	var b strings.Builder
	writeKey(&b, v)
	return b.String()
}

func writeKey(b *strings.Builder, v any) {
	switch x := v.(type) {
	case bson.D:
		b.WriteByte('{')
		for _, e := range x {
			writeLenPrefixed(b, e.Key)
			b.WriteByte('=')
			writeKey(b, e.Value)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case bson.A:
		b.WriteByte('[')
		for _, e := range x {
			writeKey(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case string:
		b.WriteByte('s')
		writeLenPrefixed(b, x)
	default:
		writeScalarKey(b, v)
	}
}

// writeLenPrefixed writes s after its length, so that no content can
// imitate the key's structure.
func writeLenPrefixed(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

func writeScalarKey(b *strings.Builder, v any) {
	if bsonutil.IsNumber(v) {
		b.WriteByte('n')
		b.WriteString(numberKey(v))
		return
	}
	b.WriteString(strconv.Itoa(bsonutil.Rank(v)))
	b.WriteByte(':')
	b.WriteString(bsonutil.Format(v))
}

// numberKey maps equal numbers of any type to one spelling.
func numberKey(v any) string {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	}
	f := bsonutil.ToFloat(v)
	if f == float64(int64(f)) && f < 9.2e18 && f > -9.2e18 {
		return strconv.FormatInt(int64(f), 10)
	}
	if d, ok := v.(bson.Decimal128); ok && !bsonutil.Equal(d, f) {
		return "d" + d.String()
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
