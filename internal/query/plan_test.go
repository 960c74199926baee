package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestEqualities(t *testing.T) {
	tests := []struct{ filter, want string }{
		{`{}`, `{}`},
		{`{a: 1, b: "x"}`, `{a: 1, b: "x"}`},
		{`{a: {$eq: 1}, b: {$gt: 2}}`, `{a: 1}`},
		{`{"a.b": {c: 1}}`, `{"a.b": {c: 1}}`},
		{`{$and: [{a: 1}, {$and: [{b: 2}]}], c: 3}`, `{a: 1, b: 2, c: 3}`},
		{`{a: {$in: [5]}, b: {$in: [1, 2]}, c: {$in: [/x/]}}`, `{a: 5}`},
		{`{a: /x/, b: {$ne: 1}, $or: [{c: 1}, {c: 2}], d: {$elemMatch: {e: 1}}}`, `{}`},
		{`{a: {$eq: 1, $lt: 5}}`, `{a: 1}`},
		{`{a: null}`, `{a: null}`},
		{`{a: 1, $comment: "x"}`, `{a: 1}`},
		{`{$or: [{a: 1, b: 2}]}`, `{a: 1, b: 2}`},
		{`{$or: [{a: 1}, {b: 2}]}`, `{}`},
	}
	for _, tc := range tests {
		f, err := NewFilter(doc(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		got := f.Equalities()
		if want := doc(tc.want); shell(got) != shell(want) {
			t.Errorf("%s: Equalities() = %s, want %s", tc.filter, shell(got), shell(want))
		}
	}
}

func TestPredicates(t *testing.T) {
	f, err := NewFilter(doc(`{a: 1, b: {$gt: 2, $lte: 9}, c: {$in: [1, 2]}, d: {$in: [/x/]},
		$and: [{e: {$lt: "z"}}, {f: {$gte: 0}}], g: {$ne: 1}, h: /x/, $or: [{i: 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`a $eq [1]`, `b $gt [2]`, `b $lte [9]`, `c $in [1, 2]`, `e $lt ["z"]`, `f $gte [0]`, `i $eq [1]`}
	got := f.Predicates()
	if len(got) != len(want) {
		t.Fatalf("Predicates() = %v", got)
	}
	for i, p := range got {
		if s := p.Path + " " + string(p.Op) + " " + shell(bson.A(p.Values)); s != want[i] {
			t.Errorf("predicate %d = %s, want %s", i, s, want[i])
		}
	}
}

func TestMatchErr(t *testing.T) {
	f, err := NewFilter(doc(`{$expr: {$divide: [1, "$d"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.MatchErr(doc(`{d: 2}`)); !ok || err != nil {
		t.Errorf("d: 2: %v, %v", ok, err)
	}
	if ok, err := f.MatchErr(doc(`{d: 0}`)); ok || err == nil {
		t.Errorf("d: 0: %v, %v; want an error", ok, err)
	}
	if f.Match(doc(`{d: 0}`)) {
		t.Error("Match is true on an evaluation error")
	}
	if f.Spec() == nil {
		t.Error("Spec() is nil")
	}
}
