package expr

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// lowerKeys is a case-insensitive collator: strings key to lower case.
type lowerKeys struct{}

func (lowerKeys) Value(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToLower(x)
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = lowerKeys{}.Value(e)
		}
		return out
	case bson.D:
		out := make(bson.D, len(x))
		for i, e := range x {
			out[i] = bson.E{Key: e.Key, Value: lowerKeys{}.Value(e.Value)}
		}
		return out
	}
	return v
}

func TestExpressionsUnderACollation(t *testing.T) {
	doc := bson.D{{Key: "name", Value: "Ann"}, {Key: "tags", Value: bson.A{"B", "a", "b"}}}
	cases := []struct{ expr, want string }{
		{`{"$eq": ["$name", "ANN"]}`, `true`},
		{`{"$cmp": ["$name", "ann"]}`, `0`},
		{`{"$in": ["ann", ["x", "$name"]]}`, `true`},
		{`{"$indexOfArray": ["$tags", "A"]}`, `1`},
		{`{"$setUnion": ["$tags"]}`, `["a", "B"]`},
		{`{"$setIsSubset": [["A"], "$tags"]}`, `true`},
		{`{"$max": "$tags"}`, `"B"`},
		{`{"$sortArray": {"input": "$tags", "sortBy": 1}}`, `["a", "B", "b"]`},
		// Strings built by an expression keep their case.
		{`{"$concat": ["$name", "!"]}`, `"Ann!"`},
	}
	vars := WithCollation(nil, lowerKeys{})
	for _, tc := range cases {
		var spec bson.D
		if err := bson.UnmarshalExtJSON([]byte(`{"e": `+tc.expr+`}`), false, &spec); err != nil {
			t.Fatal(err)
		}
		x, err := Compile(spec[0].Value)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, err := x.Eval(doc, vars)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		var want bson.D
		if err := bson.UnmarshalExtJSON([]byte(`{"v": `+tc.want+`}`), false, &want); err != nil {
			t.Fatal(err)
		}
		if exactKey(got) != exactKey(want[0].Value) {
			t.Errorf("%s = %v, want %s", tc.expr, got, tc.want)
		}
	}
}
