package query

import (
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// sortDocs are documents whose _id says what "a" holds.
var sortDocs = []string{
	`{_id: "missing"}`,
	`{_id: "null", a: null}`,
	`{_id: "empty", a: []}`,
	`{_id: "one", a: 1}`,
	`{_id: "two.5", a: 2.5}`,
	`{_id: "three", a: NumberLong(3)}`,
	`{_id: "arr0-9", a: [0, 9]}`,
	`{_id: "arr5", a: [5]}`,
	`{_id: "str", a: "x"}`,
	`{_id: "obj", a: {b: 1}}`,
	`{_id: "minkey", a: MinKey}`,
	`{_id: "maxkey", a: MaxKey}`,
	`{_id: "true", a: true}`,
	`{_id: "date", a: Date(5)}`,
	`{_id: "nested", a: [[1]]}`,
}

func TestSortOrder(t *testing.T) {
	tests := []struct{ spec, want string }{
		// Ascending: arrays sort by their smallest element, an empty array
		// as undefined (below null), missing as null; [[1]] by the array
		// [1], which sorts after objects. Equal keys keep input order.
		{`{a: 1}`, "minkey empty missing null arr0-9 one two.5 three arr5 str obj nested true date maxkey"},
		// Descending: arrays by their largest element.
		{`{a: -1}`, "maxkey date true nested obj str arr0-9 arr5 three two.5 one missing null empty minkey"},
		{`{a: 1.0, _id: -1}`, "minkey empty null missing arr0-9 one two.5 three arr5 str obj nested true date maxkey"},
	}
	for _, tc := range tests {
		s, err := NewSort(doc(tc.spec))
		if err != nil {
			t.Fatal(err)
		}
		docs := make([]bson.D, len(sortDocs))
		for i, d := range sortDocs {
			docs[i] = doc(d)
		}
		s.Sort(docs)
		if got := ids(docs); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.spec, got, tc.want)
		}
		for i := 1; i < len(docs); i++ {
			if s.Compare(docs[i-1], docs[i]) > 0 {
				t.Errorf("%s: Compare disagrees with Sort at %d", tc.spec, i)
			}
		}
	}
}

func ids(docs []bson.D) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = d[0].Value.(string)
	}
	return strings.Join(parts, " ")
}

func TestSortPaths(t *testing.T) {
	tests := []struct {
		spec, a, b string
		want       int
	}{
		{`{"a.b": 1}`, `{a: {b: 1}}`, `{a: {b: 2}}`, -1},
		{`{"a.b": 1}`, `{a: [{b: 5}, {b: 1}]}`, `{a: {b: 2}}`, -1},
		{`{"a.b": -1}`, `{a: [{b: 5}, {b: 1}]}`, `{a: {b: 2}}`, -1},
		{`{"a.b": 1}`, `{a: [{b: 5}, {c: 1}]}`, `{a: {b: 2}}`, -1}, // the element without b is null
		{`{"a.b": 1}`, `{a: [1, 2]}`, `{a: {b: null}}`, 0},
		{`{"a.1": 1}`, `{a: [9, 1]}`, `{a: [0, 2]}`, -1},
		{`{a: 1, b: -1}`, `{a: 1, b: 1}`, `{a: 1, b: 2}`, 1},
		{`{a: 1}`, `{a: 1}`, `{a: 1.0}`, 0},
		{`{a: 1}`, `{a: "B"}`, `{a: "a"}`, -1}, // binary string order
		{`{a: -1}`, `{}`, `{a: null}`, 0},
		{`{}`, `{a: 1}`, `{a: 2}`, 0},
	}
	for _, tc := range tests {
		s, err := NewSort(doc(tc.spec))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Compare(doc(tc.a), doc(tc.b)); got != tc.want {
			t.Errorf("%s: Compare(%s, %s) = %d, want %d", tc.spec, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSortStable(t *testing.T) {
	s, err := NewSort(doc(`{k: 1}`))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	for i := 0; i < 50; i++ {
		docs = append(docs, doc(`{k: `+strconv.Itoa(i%3)+`, i: `+strconv.Itoa(i)+`}`))
	}
	s.Sort(docs)
	for i := 1; i < len(docs); i++ {
		k0, k1 := docs[i-1][0].Value.(int32), docs[i][0].Value.(int32)
		if k0 > k1 || (k0 == k1 && docs[i-1][1].Value.(int32) > docs[i][1].Value.(int32)) {
			t.Fatalf("not stable at %d: %s then %s", i, shell(docs[i-1]), shell(docs[i]))
		}
	}
}

func TestSortErrors(t *testing.T) {
	tests := []struct {
		spec string
		code mongoerr.Code
		msg  string
	}{
		{`{a: 2}`, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"},
		{`{a: 0}`, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"},
		{`{a: NaN}`, 15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"},
		{`{asc: "123"}`, 15974, `Illegal key in $sort specification: asc: "123"`},
		{`{a: true}`, 15974, "Illegal key in $sort specification: a: true"},
		{`{a: {$meta: "textScore"}}`, mongoerr.NotImplemented, ""},
		{`{a: {b: 1}}`, 17312, "$meta is the only expression supported by $sort right now"},
		{`{$x: 1}`, 16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."},
		{`{"": 1}`, 40352, "FieldPath cannot be constructed with empty string"},
		{`{"a.": 1}`, 40353, "FieldPath must not end with a '.'."},
	}
	for _, tc := range tests {
		_, err := NewSort(doc(tc.spec))
		if err == nil {
			t.Errorf("NewSort(%s) succeeded", tc.spec)
			continue
		}
		wantCode(t, err, tc.code, tc.msg)
	}
	for _, ok := range []string{`{a: NumberLong(-1)}`, `{a: NumberDecimal("1.0")}`, `{a: -1.0}`, `{$natural: -1}`} {
		if _, err := NewSort(doc(ok)); err != nil {
			t.Errorf("NewSort(%s): %v", ok, err)
		}
	}
	s, _ := NewSort(doc(`{$natural: -1}`))
	if s.Natural() != -1 || !s.IsEmpty() {
		t.Errorf("$natural: Natural() = %d, IsEmpty() = %v", s.Natural(), s.IsEmpty())
	}
}
