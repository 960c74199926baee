package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A one-field equality filter is one allocation, its node inside the
// Filter; its lean copy matches and plans the same with a node of its
// own, so that it keeps nothing of the Filter (whose spec it drops).
func TestEqualityFilterAndItsLeanCopy(t *testing.T) {
	spec := bson.D{{Key: "token", Value: "abc"}}
	if got := testing.AllocsPerRun(100, func() { _, _ = NewFilter(spec) }); got != 1 {
		t.Errorf("NewFilter(%v) allocates %v times, want 1", spec, got)
	}
	f, err := NewFilter(spec)
	if err != nil {
		t.Fatal(err)
	}
	lean := f.Lean()
	if lean.Spec() != nil || lean.root == f.root {
		t.Fatalf("the lean filter keeps the spec or the Filter's own node")
	}
	for _, doc := range []bson.D{{{Key: "token", Value: "abc"}}, {{Key: "token", Value: "abd"}}, {}} {
		if f.Match(doc) != lean.Match(doc) {
			t.Errorf("%v: the lean filter matches differently", doc)
		}
	}
	p, lp := f.Predicates(), lean.Predicates()
	if len(p) != 1 || len(lp) != 1 || p[0].Path != lp[0].Path || p[0].Op != lp[0].Op || p[0].Values[0] != lp[0].Values[0] {
		t.Errorf("predicates %v, lean %v", p, lp)
	}
	if _, err := NewFilter(bson.D{{Key: "a", Value: bson.Undefined{}}}); err == nil {
		t.Error("an equality to undefined is accepted")
	}
}
