package query

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// FuzzFilter builds a filter, a document, a projection and a sort from the
// fuzz input and checks that nothing panics and that the match entry
// points agree with each other.
func FuzzFilter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("filter and document"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzlimit.Run(t, func() {
			g := &fuzzGen{data: data}
			filter, d := g.filter(0), g.doc(0)
			checkFilter(t, filter, d)
			if p, err := NewProjection(g.projection()); err == nil {
				_, _ = p.Apply(d, int(g.byte())-1)
			}
			if s, err := NewSort(g.sortSpec()); err == nil {
				s.Sort([]bson.D{d, g.doc(0), g.doc(0)})
			}
		}, data)
	})
}

func checkFilter(t *testing.T, filter, d bson.D) {
	f, err := NewFilter(filter)
	if err != nil {
		return
	}
	m := f.Match(d)
	ok, idx := f.MatchPositional(d)
	okErr, evalErr := f.MatchErr(d)
	if m != ok || (evalErr == nil && okErr != m) || (!ok && idx != -1) {
		t.Fatalf("%s on %s: Match %v, MatchPositional %v %d, MatchErr %v %v",
			shell(filter), shell(d), m, ok, idx, okErr, evalErr)
	}
	_ = f.Equalities()
	_ = f.Predicates()
}

// fuzzGen turns bytes into BSON values biased toward the interesting:
// few field names, so that filters and documents meet, and operators with
// arguments that are sometimes right and sometimes wrong.
type fuzzGen struct {
	data []byte
	i    int
}

func (g *fuzzGen) byte() byte {
	if g.i >= len(g.data) {
		return 0
	}
	b := g.data[g.i]
	g.i++
	return b
}

func (g *fuzzGen) pick(n int) int { return int(g.byte()) % n }

var fuzzFields = []string{"a", "b", "a.b", "a.0", "a.b.c", "_id", "a.1.b", "c"}

var fuzzScalars = []any{
	int32(0), int32(1), int32(-1), int64(5), 2.5, math.NaN(), math.Inf(1), "x", "", "ab\nc",
	nil, true, false, bson.Undefined{}, bson.MinKey{}, bson.MaxKey{}, bson.DateTime(7),
	bson.Regex{Pattern: "^a", Options: "i"}, bson.Binary{Data: []byte{3}}, bson.Timestamp{T: 1},
	bson.ObjectID{1}, bson.Symbol("s"),
}

var fuzzPatterns = []string{"a", "^x$", "(", "a+", "(?i)a", `\1`, "[a-", "a{2}+", "(?=a)", `\Qa\E`,
	"a b # c", "[[:alpha:]]", `\h\v\R`, "(?<n>a)", "(?'n'a)", "$", `\Z`, "é", "(?#c)a", "a{1001}"}

func (g *fuzzGen) value(depth int) any {
	switch k := g.pick(10); {
	case k < 6 || depth > 2:
		return fuzzScalars[g.pick(len(fuzzScalars))]
	case k < 8:
		return g.array(depth + 1)
	default:
		return g.doc(depth + 1)
	}
}

func (g *fuzzGen) array(depth int) bson.A {
	a := bson.A{}
	for n := g.pick(4); n > 0; n-- {
		a = append(a, g.value(depth))
	}
	return a
}

func (g *fuzzGen) doc(depth int) bson.D {
	d := bson.D{}
	for n := g.pick(4); n > 0; n-- {
		name := fuzzFields[g.pick(len(fuzzFields))]
		if depth > 0 {
			name = name[:1]
		}
		d = append(d, bson.E{Key: name, Value: g.value(depth)})
	}
	return d
}

func (g *fuzzGen) filter(depth int) bson.D {
	d := bson.D{}
	for n := 1 + g.pick(3); n > 0; n-- {
		d = append(d, g.filterElem(depth))
	}
	return d
}

func (g *fuzzGen) filterElem(depth int) bson.E {
	if depth < 3 && g.pick(5) == 0 {
		op := []string{"$and", "$or", "$nor", "$expr", "$comment", "$alwaysTrue", "$foo"}[g.pick(7)]
		if op == "$expr" {
			return bson.E{Key: op, Value: bson.D{{Key: "$gt", Value: bson.A{"$a", g.value(2)}}}}
		}
		return bson.E{Key: op, Value: bson.A{g.filter(depth + 1), g.filter(depth + 1)}}
	}
	name := fuzzFields[g.pick(len(fuzzFields))]
	if g.pick(3) == 0 {
		return bson.E{Key: name, Value: g.value(depth)}
	}
	return bson.E{Key: name, Value: g.operators(depth)}
}

var fuzzOps = []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type",
	"$size", "$mod", "$regex", "$all", "$elemMatch", "$not", "$bitsAllSet", "$bitsAnyClear", "$options", "$bad"}

func (g *fuzzGen) operators(depth int) bson.D {
	d := bson.D{}
	for n := 1 + g.pick(2); n > 0; n-- {
		op := fuzzOps[g.pick(len(fuzzOps))]
		d = append(d, bson.E{Key: op, Value: g.operand(op, depth)})
	}
	return d
}

func (g *fuzzGen) operand(op string, depth int) any {
	switch {
	case op == "$regex" && g.pick(2) == 0:
		return fuzzPatterns[g.pick(len(fuzzPatterns))]
	case (op == "$elemMatch" || op == "$not") && depth < 3 && g.pick(2) == 0:
		if g.pick(2) == 0 {
			return g.operators(depth + 1)
		}
		return g.filter(depth + 1)
	case op == "$type" && g.pick(2) == 0:
		return []any{"int", "number", "array", int32(2), "nope"}[g.pick(5)]
	case op == "$mod" && g.pick(2) == 0:
		return bson.A{int32(g.pick(4)), int32(g.pick(3))}
	}
	return g.value(depth)
}

func (g *fuzzGen) projection() bson.D {
	d := bson.D{}
	for n := g.pick(3); n > 0; n-- {
		name := []string{"a", "a.b", "b", "_id", "a.$", "c.d"}[g.pick(6)]
		var v any = int32(g.pick(2))
		switch g.pick(6) {
		case 0:
			v = bson.D{{Key: "$slice", Value: g.value(2)}}
		case 1:
			v = bson.D{{Key: "$elemMatch", Value: g.operators(2)}}
		case 2:
			v = g.value(1)
		}
		d = append(d, bson.E{Key: name, Value: v})
	}
	return d
}

func (g *fuzzGen) sortSpec() bson.D {
	d := bson.D{}
	for n := g.pick(3); n > 0; n-- {
		d = append(d, bson.E{Key: fuzzFields[g.pick(len(fuzzFields))], Value: []any{int32(1), int32(-1), 2.0}[g.pick(3)]})
	}
	return d
}
