package update

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// caseless is a collator under which strings compare case-insensitively:
// a string keys to its lower case.
type caseless struct{}

func (caseless) Value(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToLower(x)
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = caseless{}.Value(e)
		}
		return out
	case bson.D:
		return caseless{}.Doc(x)
	}
	return v
}

func (caseless) Doc(d bson.D) bson.D {
	out := make(bson.D, len(d))
	for i, e := range d {
		out[i] = bson.E{Key: e.Key, Value: caseless{}.Value(e.Value)}
	}
	return out
}

func TestOperatorsUnderACollation(t *testing.T) {
	cases := []struct {
		name, doc, update string
		filters           []string
		want              string
	}{
		{"$addToSet finds an equal string", `{"t": ["a"]}`, `{"$addToSet": {"t": "A"}}`, nil, `{"t": ["a"]}`},
		{"$addToSet $each dedupes", `{"t": []}`, `{"$addToSet": {"t": {"$each": ["B", "b"]}}}`, nil, `{"t": ["B"]}`},
		{"$pull by value", `{"t": ["a", "B"]}`, `{"$pull": {"t": "b"}}`, nil, `{"t": ["a"]}`},
		{"$pull by condition", `{"t": ["a", "B", "c"]}`, `{"$pull": {"t": {"$gte": "b"}}}`, nil, `{"t": ["a"]}`},
		{"$pullAll", `{"t": ["a", "B"]}`, `{"$pullAll": {"t": ["A"]}}`, nil, `{"t": ["B"]}`},
		{"$max", `{"s": "ann"}`, `{"$max": {"s": "Zed"}}`, nil, `{"s": "Zed"}`},
		{"$min", `{"s": "ann"}`, `{"$min": {"s": "Zed"}}`, nil, `{"s": "ann"}`},
		{"$push $sort", `{"t": []}`, `{"$push": {"t": {"$each": ["b", "A", "C"], "$sort": 1}}}`, nil, `{"t": ["A", "b", "C"]}`},
		{"arrayFilters", `{"t": ["a", "B"]}`, `{"$set": {"t.$[x]": "z"}}`, []string{`{"x": "b"}`}, `{"t": ["a", "z"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var filters []bson.D
			for _, f := range tc.filters {
				filters = append(filters, ej(t, f))
			}
			up, err := ParseCollated(ej(t, tc.update), filters, caseless{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := up.Apply(ej(t, tc.doc), Context{Now: testNow, Positional: -1})
			if err != nil {
				t.Fatal(err)
			}
			if want := ej(t, tc.want); !identicalDocs(got, want) {
				t.Fatalf("got  %s\nwant %s", formatValue(got), formatValue(want))
			}
		})
	}
	// Without a collation the same updates compare in binary order.
	up, err := Parse(ej(t, `{"$addToSet": {"t": "A"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := up.Apply(ej(t, `{"t": ["a"]}`), Context{Now: testNow, Positional: -1}); !identicalDocs(got, ej(t, `{"t": ["a", "A"]}`)) {
		t.Fatalf("binary $addToSet: %s", formatValue(got))
	}
}
