package ixbounds

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// samples are values of every canonical BSON type, several of the types
// that share one (numbers; strings and symbols).
func samples() []any {
	return []any{
		bson.MinKey{}, bson.Undefined{}, nil, bson.Null{},
		int32(7), int64(-3), 2.5, bson.NewDecimal128(0, 11), math.Inf(1),
		"b", bson.Symbol("s"), bson.D{{Key: "a", Value: 1}}, bson.A{int32(1)},
		bson.Binary{Data: []byte{1}}, bson.NewObjectIDFromTimestamp(bson.DateTime(5).Time()),
		true, false, bson.DateTime(1_700_000_000_000), bson.Timestamp{T: 3, I: 1},
		bson.Regex{Pattern: "x"}, bson.MaxKey{},
	}
}

// TestTypeBracketHoldsEveryType: for a value of each type, its bracket
// contains it and leaves its type only at an exclusive top; and the
// samples cover every type rankOrder lists, so a type added there without
// a sample here fails.
func TestTypeBracketHoldsEveryType(t *testing.T) {
	covered := map[int]bool{}
	for _, v := range samples() {
		covered[bsonutil.Rank(v)] = true
		bottom, top, topIncl := typeBracket(v)
		if bsonutil.Compare(bottom, v) > 0 {
			t.Errorf("%#v: bottom %#v above it", v, bottom)
		}
		if c := bsonutil.Compare(v, top); c > 0 || (c == 0 && !topIncl) {
			t.Errorf("%#v: top %#v (inclusive %v) does not hold it", v, top, topIncl)
		}
		if bsonutil.Rank(bottom) != bsonutil.Rank(v) {
			t.Errorf("%#v: bottom %#v of another type", v, bottom)
		}
		if topIncl && bsonutil.Rank(top) != bsonutil.Rank(v) {
			t.Errorf("%#v: inclusive top %#v of another type", v, top)
		}
	}
	for _, v := range rankOrder() {
		if !covered[bsonutil.Rank(v)] {
			t.Errorf("no sample of the type of %#v", v)
		}
	}
}

func pred(op query.Op, v any) query.Predicate {
	return query.Predicate{Path: "a", Op: op, Values: []any{v}}
}

// TestRange: one side only, the tightest of it, within the type; the
// other side joins only by Intersect, and only of the same type.
func TestRange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ps        []query.Predicate
		want      Interval
		intersect Interval
	}{
		{"gt", []query.Predicate{pred(query.OpGt, 5)},
			Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}, Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}},
		{"tightest lower", []query.Predicate{pred(query.OpGt, 5), pred(query.OpGte, 7)},
			Interval{Lo: 7, Hi: math.Inf(1), LoIncl: true, HiIncl: true}, Interval{Lo: 7, Hi: math.Inf(1), LoIncl: true, HiIncl: true}},
		{"strict wins a tie", []query.Predicate{pred(query.OpGte, 5), pred(query.OpGt, 5)},
			Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}, Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}},
		{"both sides", []query.Predicate{pred(query.OpGt, 5), pred(query.OpLt, 9)},
			Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}, Interval{Lo: 5, Hi: 9}},
		{"other type kept out", []query.Predicate{pred(query.OpGt, 5), pred(query.OpLt, "z")},
			Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}, Interval{Lo: 5, Hi: math.Inf(1), HiIncl: true}},
		{"string", []query.Predicate{pred(query.OpLte, "m")},
			Interval{Lo: "", Hi: "m", LoIncl: true, HiIncl: true}, Interval{Lo: "", Hi: "m", LoIncl: true, HiIncl: true}},
		{"NaN is a point", []query.Predicate{pred(query.OpGte, math.NaN())},
			Point(math.NaN()), Point(math.NaN())},
	} {
		got, used, ok := Range(tc.ps)
		if !ok || !same(got, tc.want) {
			t.Errorf("%s: Range = %+v (%v), want %+v", tc.name, got, ok, tc.want)
			continue
		}
		if got, _ := Intersect(got, used, tc.ps); !same(got, tc.intersect) {
			t.Errorf("%s: Intersect = %+v, want %+v", tc.name, got, tc.intersect)
		}
	}
	if _, _, ok := Range([]query.Predicate{pred(query.OpEq, 1)}); ok {
		t.Error("Range of an equality reported a range")
	}
}

func same(a, b Interval) bool {
	return bsonutil.Compare(a.Lo, b.Lo) == 0 && bsonutil.Compare(a.Hi, b.Hi) == 0 && a.LoIncl == b.LoIncl && a.HiIncl == b.HiIncl
}

// TestPoints: an $in list's points, sorted in BSON order and each once.
func TestPoints(t *testing.T) {
	got := Points([]any{int32(3), "a", 1.0, int64(3), nil})
	want := []any{nil, 1.0, int32(3), "a"}
	if len(got) != len(want) {
		t.Fatalf("Points = %+v, want %v", got, want)
	}
	for i, v := range want {
		if !got[i].IsPoint() || bsonutil.Compare(got[i].Lo, v) != 0 {
			t.Errorf("point %d = %+v, want %v", i, got[i], v)
		}
	}
}

// TestNullish: the values a document without the field matches.
func TestNullish(t *testing.T) {
	for _, v := range samples() {
		want := false
		switch v.(type) {
		case nil, bson.Null, bson.Undefined, bson.MinKey, bson.MaxKey:
			want = true
		}
		if Nullish(v) != want {
			t.Errorf("Nullish(%#v) = %v", v, !want)
		}
	}
	if !AnyNullish([]any{1, nil}) || AnyNullish([]any{1, "x"}) {
		t.Error("AnyNullish disagrees with Nullish")
	}
}

// TestImpliesPartial: a partial filter's clauses each implied by a
// predicate on their path, or the index is not used.
func TestImpliesPartial(t *testing.T) {
	gt := func(v any) bson.D { return bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: v}}}} }
	preds := func(ps ...query.Predicate) map[string][]query.Predicate {
		return map[string][]query.Predicate{"a": ps}
	}
	for _, tc := range []struct {
		name    string
		preds   map[string][]query.Predicate
		partial bson.D
		want    bool
	}{
		{"tighter lower bound", preds(pred(query.OpGt, 7)), gt(5), true},
		{"equal strict", preds(pred(query.OpGt, 5)), gt(5), true},
		{"equal not strict", preds(pred(query.OpGte, 5)), gt(5), false},
		{"looser", preds(pred(query.OpGt, 3)), gt(5), false},
		{"other side", preds(pred(query.OpLt, 9)), gt(5), false},
		{"other type", preds(pred(query.OpGt, "x")), gt(5), false},
		{"equality inside", preds(pred(query.OpEq, 6)), gt(5), true},
		{"$in all inside", preds(query.Predicate{Path: "a", Op: query.OpIn, Values: []any{6, 8}}), gt(5), true},
		{"$in one outside", preds(query.Predicate{Path: "a", Op: query.OpIn, Values: []any{6, 4}}), gt(5), false},
		{"exists by equality", preds(pred(query.OpEq, 1)), bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}, true},
		{"exists, null sought", preds(pred(query.OpEq, nil)), bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}, false},
		{"equality filter", preds(pred(query.OpEq, 1)), bson.D{{Key: "a", Value: 1}}, true},
		{"no predicate on the path", preds(), gt(5), false},
	} {
		if got := ImpliesPartial(tc.preds, tc.partial); got != tc.want {
			t.Errorf("%s: ImpliesPartial = %v, want %v", tc.name, got, tc.want)
		}
	}
}
