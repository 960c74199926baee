package query

import (
	"strings"
	"testing"
)

// The documents of MongoDB's jstests/core/null_query_semantics.js, whose
// expectations TestMatchNullSemantics reproduces, with undefined values
// answered as MongoDB 8.0 does ($eq: null no longer matches undefined).
var nullDocs = []string{
	`{_id: "a_empty_subobject", a: {}}`,
	`{_id: "a_null", a: null}`,
	`{_id: "a_number", a: 4}`,
	`{_id: "a_subobject_b_not_null", a: {b: "hi"}}`,
	`{_id: "a_subobject_b_null", a: {b: null}}`,
	`{_id: "a_undefined", a: undefined}`,
	`{_id: "no_a"}`,
	`{_id: "a_double_array", a: [[]]}`,
	`{_id: "a_empty_array", a: []}`,
	`{_id: "a_object_array_all_b_nulls", a: [{b: null}, {b: null}, {}]}`,
	`{_id: "a_object_array_no_b_nulls", a: [{b: 1}, {b: 3}, {b: "string"}]}`,
	`{_id: "a_object_array_some_b_nulls", a: [{b: null}, {b: 3}, {b: null}]}`,
	`{_id: "a_object_array_some_b_missing", a: [{b: 3}, {}]}`,
	`{_id: "a_value_array_all_nulls", a: [null, null]}`,
	`{_id: "a_value_array_no_nulls", a: [1, "string", 4]}`,
	`{_id: "a_value_array_with_null", a: [1, "string", null, 4]}`,
}

func TestMatchNullSemantics(t *testing.T) {
	notNull := "a_empty_subobject a_number a_subobject_b_not_null a_subobject_b_null a_undefined " +
		"a_double_array a_empty_array a_object_array_all_b_nulls a_object_array_no_b_nulls " +
		"a_object_array_some_b_nulls a_object_array_some_b_missing a_value_array_no_nulls"
	tests := []struct{ filter, want string }{
		{`{a: {$eq: null}}`, "a_null no_a a_value_array_all_nulls a_value_array_with_null"},
		{`{a: {$ne: null}}`, notNull},
		{`{a: {$not: {$gte: null}}}`, notNull},
		{`{a: {$in: [null, 75]}}`, "a_null no_a a_value_array_all_nulls a_value_array_with_null"},
		{`{a: {$exists: false}}`, "no_a"},
		{`{"a.b": {$eq: null}}`, "a_empty_subobject a_null a_number a_subobject_b_null a_undefined no_a " +
			"a_object_array_all_b_nulls a_object_array_some_b_nulls a_object_array_some_b_missing"},
		{`{"a.b": {$ne: null}}`, "a_subobject_b_not_null a_double_array a_empty_array a_object_array_no_b_nulls " +
			"a_value_array_all_nulls a_value_array_no_nulls a_value_array_with_null"},
		{`{"a.b": {$exists: false}}`, "a_empty_subobject a_null a_number a_undefined no_a a_double_array " +
			"a_empty_array a_value_array_all_nulls a_value_array_no_nulls a_value_array_with_null"},
		{`{a: {$elemMatch: {$eq: null}}}`, "a_value_array_all_nulls a_value_array_with_null"},
		{`{a: {$elemMatch: {$ne: null}}}`, "a_double_array a_object_array_all_b_nulls a_object_array_no_b_nulls " +
			"a_object_array_some_b_nulls a_object_array_some_b_missing a_value_array_no_nulls a_value_array_with_null"},
		{`{a: {$elemMatch: {b: {$eq: null}}}}`, "a_double_array a_object_array_all_b_nulls " +
			"a_object_array_some_b_nulls a_object_array_some_b_missing"},
		{`{a: {$elemMatch: {b: {$ne: null}}}}`, "a_object_array_no_b_nulls a_object_array_some_b_nulls " +
			"a_object_array_some_b_missing"},
		{`{"a.b": {$elemMatch: {$eq: null}}}`, ""},
	}
	for _, tc := range tests {
		f, err := NewFilter(doc(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range nullDocs {
			if f.Match(doc(d)) {
				got = append(got, doc(d)[0].Value.(string))
			}
		}
		if !sameSet(got, strings.Fields(tc.want)) {
			t.Errorf("%s matched %v, want %s", tc.filter, got, tc.want)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestMatchPositional(t *testing.T) {
	tests := []struct {
		filter, doc string
		ok          bool
		idx         int
	}{
		{`{a: 2}`, `{a: [1, 2, 3]}`, true, 1},
		{`{a: {$gt: 1}}`, `{a: [1, 2, 3]}`, true, 1},
		{`{a: 1}`, `{a: 1}`, true, -1},
		{`{a: [1, 2]}`, `{a: [1, 2]}`, true, -1},
		{`{"a.b": 5}`, `{a: [{b: 1}, {b: 5}]}`, true, 1},
		{`{"a.b": 5}`, `{a: [{b: 1}, {b: [4, 5]}]}`, true, 1},
		{`{"a.1": 5}`, `{a: [4, 5]}`, true, -1},
		{`{a: {$elemMatch: {b: 2}}}`, `{a: [{b: 1}, {b: 2}]}`, true, 1},
		{`{"a.b": {$elemMatch: {$gt: 2}}}`, `{a: [{b: [1]}, {b: [3]}]}`, true, 1},
		{`{x: 1, a: 3}`, `{x: 1, a: [1, 3]}`, true, 1},
		{`{a: 3, b: 9}`, `{a: [1, 3], b: [9]}`, true, 1},
		{`{$or: [{a: 3}]}`, `{a: [1, 3]}`, true, -1},
		{`{a: {$ne: 3}}`, `{a: [1, 2]}`, true, -1},
		{`{a: 7}`, `{a: [1, 3]}`, false, -1},
		{`{$and: [{a: {$gt: 2}}]}`, `{a: [1, 3]}`, true, 1},
		{`{a: {$all: [3]}}`, `{a: [1, 3]}`, true, 1},
		{`{a: {$in: [5, 3]}}`, `{a: [1, 3]}`, true, 1},
	}
	for _, tc := range tests {
		f, err := NewFilter(doc(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		ok, idx := f.MatchPositional(doc(tc.doc))
		if ok != tc.ok || idx != tc.idx {
			t.Errorf("%s on %s = %v, %d; want %v, %d", tc.filter, tc.doc, ok, idx, tc.ok, tc.idx)
		}
	}
}
