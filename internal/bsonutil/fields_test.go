package bsonutil

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFieldEditsCopy: each edit answers a new document and leaves the one
// it was given as it was, so a document in use never changes under a
// reader.
func TestFieldEditsCopy(t *testing.T) {
	orig := bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}}
	for _, tc := range []struct {
		name string
		got  bson.D
		want bson.D
	}{
		{"set present", WithField(orig, "a", 9), bson.D{{Key: "a", Value: 9}, {Key: "b", Value: 2}}},
		{"set absent", WithField(orig, "c", 3), bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "c", Value: 3}}},
		{"remove", WithoutField(orig, "a"), bson.D{{Key: "b", Value: 2}}},
		{"remove absent", WithoutField(orig, "z"), orig},
		{"set several", WithFields(orig, bson.D{{Key: "b", Value: 5}, {Key: "d", Value: 4}}), bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 5}, {Key: "d", Value: 4}}},
	} {
		if Compare(tc.got, tc.want) != 0 || len(tc.got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if Compare(orig, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}}) != 0 {
		t.Errorf("the edits changed the original: %v", orig)
	}
}

// TestHoldsString: a string anywhere in a value, and only a string or a
// symbol, is one a collation applies to.
func TestHoldsString(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{"x", true}, {bson.Symbol("s"), true}, {int32(1), false}, {nil, false},
		{bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{2, "x"}}}, true},
		{bson.A{1, bson.D{{Key: "a", Value: 2.5}}}, false},
		{bson.Regex{Pattern: "x"}, false},
	} {
		if got := HoldsString(tc.v); got != tc.want {
			t.Errorf("HoldsString(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
