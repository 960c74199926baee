package oplog

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestDiffRoundTrip: for each change of a document, the diff built from
// its change stream updateDescription turns the old document into the
// new one, field for field and in order.
func TestDiffRoundTrip(t *testing.T) {
	base := bson.D{
		{Key: "_id", Value: int32(1)},
		{Key: "name", Value: "cart"},
		{Key: "items", Value: bson.A{"a", "b", bson.D{{Key: "sku", Value: "c"}, {Key: "n", Value: int32(1)}}}},
		{Key: "sub", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "7", Value: "seven"}, {Key: "deep", Value: bson.D{{Key: "y", Value: 2.5}}}}},
		{Key: "grid", Value: bson.A{bson.A{int32(1), int32(2)}, bson.A{int32(3)}}},
	}
	with := func(edit func(d bson.D) bson.D) bson.D {
		return edit(cloneDoc(base))
	}
	cases := map[string]bson.D{
		"a top-level field set": with(func(d bson.D) bson.D { d[1].Value = "basket"; return d }),
		"a field added":         with(func(d bson.D) bson.D { return append(d, bson.E{Key: "at", Value: bson.DateTime(5)}) }),
		"a field removed":       with(func(d bson.D) bson.D { return append(d[:1:1], d[2:]...) }),
		"a nested field set and one removed": with(func(d bson.D) bson.D {
			d[3].Value = bson.D{{Key: "7", Value: "SEVEN"}, {Key: "deep", Value: bson.D{{Key: "y", Value: 3.5}, {Key: "z", Value: true}}}}
			return d
		}),
		"elements pushed": with(func(d bson.D) bson.D {
			d[2].Value = append(d[2].Value.(bson.A), "d", "e")
			return d
		}),
		"elements popped and one changed": with(func(d bson.D) bson.D { d[2].Value = bson.A{"z"}; return d }),
		"a field inside an element": with(func(d bson.D) bson.D {
			d[2].Value.(bson.A)[2] = bson.D{{Key: "sku", Value: "c"}, {Key: "n", Value: int32(2)}}
			return d
		}),
		"a nested array cut": with(func(d bson.D) bson.D {
			d[4].Value = bson.A{bson.A{int32(1)}, bson.A{int32(3), int32(4)}}
			return d
		}),
		"a type changed": with(func(d bson.D) bson.D { d[3].Value = "flat"; return d }),
	}
	for name, next := range cases {
		desc := changestream.UpdateDescription(cloneDoc(base), next)
		diff, err := Diff(desc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := ApplyDiff(base, diff)
		if err != nil {
			t.Fatalf("%s: apply %v: %v", name, diff, err)
		}
		same(t, name, got, next)
	}
}

// cloneDoc is a deep copy of d, through its encoding.
func cloneDoc(d bson.D) bson.D {
	raw, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	var out bson.D
	if err := bson.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// TestApplyDiffRefusesMismatches: a diff that does not fit the document
// is refused with BadValue, never applied in part.
func TestApplyDiffRefusesMismatches(t *testing.T) {
	doc := bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: "text"}, {Key: "arr", Value: bson.A{int32(1)}}}
	bad := []bson.D{
		{{Key: "sa", Value: bson.D{{Key: "u", Value: bson.D{{Key: "x", Value: int32(1)}}}}}},   // a is a string
		{{Key: "sarr", Value: bson.D{{Key: "u", Value: bson.D{{Key: "x", Value: int32(1)}}}}}}, // arr is an array
		{{Key: "smissing", Value: bson.D{{Key: "a", Value: true}, {Key: "u0", Value: int32(1)}}}},
		{{Key: "x", Value: int32(1)}},
		{{Key: "sarr", Value: bson.D{{Key: "a", Value: true}, {Key: "l", Value: "two"}}}},
	}
	for _, diff := range bad {
		if _, err := ApplyDiff(doc, diff); err == nil || mongoerr.As(err).Code != mongoerr.BadValue {
			t.Errorf("diff %v: %v, want BadValue", diff, err)
		}
	}
}
