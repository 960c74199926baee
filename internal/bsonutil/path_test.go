package bsonutil

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ej parses relaxed Extended JSON into a document: small integers become
// int32, as documents from drivers have them.
func ej(s string) bson.D {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		panic(fmt.Sprintf("%s: %v", s, err))
	}
	return d
}

// ejValues parses a JSON array of expected values.
func ejValues(s string) bson.A {
	if s == "" {
		return nil
	}
	return ej(`{"v": ` + s + `}`)[0].Value.(bson.A)
}

// sameValue compares by type and value, so that 1 and 1.0 differ.
func sameValue(x, y any) bool {
	return fmt.Sprintf("%#v", x) == fmt.Sprintf("%#v", y)
}

func TestLookupPath(t *testing.T) {
	doc := ej(`{"a": {"b": 1, "c": [10, {"x": "y"}, [7, 8]]}, "n": null, "s": "str", "7": "seven"}`)
	tests := []struct {
		path  string
		want  string // JSON of the value, "" when not found
		found bool
	}{
		{"a.b", `1`, true},
		{"a.c.0", `10`, true},
		{"a.c.1.x", `"y"`, true},
		{"a.c.2.1", `8`, true},
		{"a.c.3", ``, false},
		{"a.c.x", ``, false},  // no expansion through arrays
		{"a.c.01", ``, false}, // array field names have no leading zeros
		{"a.c.-1", ``, false},
		{"n", `null`, true},
		{"n.x", ``, false},
		{"s.0", ``, false},
		{"7", `"seven"`, true},
		{"missing", ``, false},
		{"a.c", `[10, {"x": "y"}, [7, 8]]`, true},
	}
	for _, tc := range tests {
		got, found := LookupPath(doc, tc.path)
		var want any
		if tc.want != "" {
			want = ejValues("[" + tc.want + "]")[0]
		}
		if found != tc.found || !sameValue(got, want) {
			t.Errorf("LookupPath(%q) = %v, %v; want %v, %v", tc.path, got, found, want, tc.found)
		}
	}
}

func TestPathValues(t *testing.T) {
	tests := []struct {
		doc, path, want string
	}{
		{`{"a": 1}`, "a", `[1]`},
		{`{"a": null}`, "a", `[null]`},
		{`{}`, "a", ``},
		{`{"a": 1}`, "a.b", ``},
		{`{"a": {"b": 2}}`, "a.b", `[2]`},
		{`{"a": {"b": 2}}`, "a", `[{"b": 2}]`},
		// Leaf arrays come back whole.
		{`{"a": [1, 2]}`, "a", `[[1, 2]]`},
		{`{"a": []}`, "a", `[[]]`},
		{`{"a": {"b": [1, 2]}}`, "a.b", `[[1, 2]]`},
		// Expansion through an array of documents.
		{`{"a": [{"b": 1}, {"b": [2, 3]}]}`, "a.b", `[1, [2, 3]]`},
		// Elements without the rest of the path contribute nothing.
		{`{"a": [{"b": 1}, {"c": 2}, 5, [{"b": 9}]]}`, "a.b", `[1]`},
		{`{"a": []}`, "a.b", ``},
		// Every array on the way is expanded.
		{`{"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": {"c": 3}}]}`, "a.b.c", `[1, 2, 3]`},
		// Positional components select one element.
		{`{"a": [{"b": 1}, {"b": 2}]}`, "a.1.b", `[2]`},
		{`{"a": [10, 20]}`, "a.1", `[20]`},
		{`{"a": [10, 20]}`, "a.5", ``},
		{`{"a": [[1, 2]]}`, "a.0", `[[1, 2]]`},
		{`{"a": [[{"b": 1}, {"b": 2}]]}`, "a.0.b", `[1, 2]`},
		// A field named like the index wins over the position.
		{`{"a": [{"0": "f"}, "p"]}`, "a.0", `["f"]`},
		// Through a document with a numeric field name.
		{`{"a": {"0": [1, 2]}}`, "a.0", `[[1, 2]]`},
		{`{"a": 1.5, "b": {"$numberLong": "7"}}`, "b", `[{"$numberLong": "7"}]`},
	}
	for _, tc := range tests {
		got := PathValues(ej(tc.doc), tc.path)
		if want := ejValues(tc.want); !sameValue(bson.A(got), want) {
			t.Errorf("PathValues(%s, %q) = %#v; want %#v", tc.doc, tc.path, got, want)
		}
	}
}

func TestIndexKeys(t *testing.T) {
	tests := []struct {
		doc, path, want string
		missing         bool
	}{
		{`{}`, "a", `[null]`, true},
		{`{"a": null}`, "a", `[null]`, false},
		{`{"a": 1}`, "a", `[1]`, false},
		{`{"a": 1}`, "a.b", `[null]`, true},
		{`{"a": [1, 2]}`, "a", `[1, 2]`, false},
		{`{"a": [1, [2, 3]]}`, "a", `[1, [2, 3]]`, false},
		{`{"a": []}`, "a", `[{"$undefined": true}]`, false},
		{`{"a": []}`, "a.b", `[null]`, false},
		{`{"a": [{"b": 1}, {"c": 2}]}`, "a.b", `[1, null]`, false},
		{`{"a": [1, 2]}`, "a.b", `[null, null]`, false},
		{`{"a": [{"b": 1}, {"b": [2, 3]}]}`, "a.b", `[1, 2, 3]`, false},
		{`{"a": [{"b": []}]}`, "a.b", `[{"$undefined": true}]`, false},
		{`{"a": [[1, 2]]}`, "a.0", `[[1, 2]]`, false},
		{`{"a": [[]]}`, "a.0", `[{"$undefined": true}]`, false},
		{`{"a": [{"b": 1}, {"b": 2}]}`, "a.0.b", `[1]`, false},
	}
	for _, tc := range tests {
		got, missing := IndexKeys(ej(tc.doc), tc.path)
		if want := ejValues(tc.want); !sameValue(bson.A(got), want) || missing != tc.missing {
			t.Errorf("IndexKeys(%s, %q) = %#v, %v; want %#v, %v", tc.doc, tc.path, got, missing, want, tc.missing)
		}
	}
}

func TestPathValuesAcceptsOtherContainers(t *testing.T) {
	doc := bson.D{{Key: "a", Value: []any{bson.M{"b": int32(1)}}}}
	got := PathValues(doc, "a.b")
	if !sameValue(bson.A(got), bson.A{int32(1)}) {
		t.Fatalf("got %#v", got)
	}
}
