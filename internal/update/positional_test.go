package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestPositional(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "dollar uses matched index", doc: `{"_id": 1, "a": [1, 2, 3]}`, pos: at(1),
			update: `{"$set": {"a.$": 9}}`, want: `{"_id": 1, "a": [1, 9, 3]}`, changed: true},
		{name: "dollar into element field", doc: `{"_id": 1, "a": [{"b": 1}, {"b": 2}]}`, pos: at(0),
			update: `{"$inc": {"a.$.b": 5}}`, want: `{"_id": 1, "a": [{"b": 6}, {"b": 2}]}`, changed: true},
		{name: "dollar without match", doc: `{"_id": 1, "a": [1]}`, update: `{"$set": {"a.$": 9}}`,
			code: mongoerr.BadValue, msg: "The positional operator did not find the match needed from the query."},
		{name: "dollar merged with same index", doc: `{"_id": 1, "a": [{"b": 1}]}`, pos: at(0),
			update: `{"$set": {"a.$.b": 2, "a.0.c": 3}}`, want: `{"_id": 1, "a": [{"b": 2, "c": 3}]}`, changed: true},
		{name: "dollar merge conflict", doc: `{"_id": 1, "a": [{"b": 1}]}`, pos: at(0),
			update: `{"$set": {"a.$.b": 2, "a.0.b": 3}}`, code: mongoerr.ConflictingUpdateOperators,
			msg: "Update created a conflict at 'a.0.b'"},
		{name: "dollar other index no merge", doc: `{"_id": 1, "a": [{"b": 1}, {"b": 1}]}`, pos: at(1),
			update: `{"$set": {"a.$.b": 2, "a.0.b": 3}}`, want: `{"_id": 1, "a": [{"b": 3}, {"b": 2}]}`, changed: true},
		{name: "dollar past end pads", doc: `{"_id": 1, "a": [1]}`, pos: at(2),
			update: `{"$set": {"a.$": 9}}`, want: `{"_id": 1, "a": [1, null, 9]}`, changed: true},
		{name: "all elements", doc: `{"_id": 1, "a": [1, 2, 3]}`, update: `{"$inc": {"a.$[]": 10}}`,
			want: `{"_id": 1, "a": [11, 12, 13]}`, changed: true},
		{name: "all elements field", doc: `{"_id": 1, "a": [{"b": 1}, {"c": 1}]}`, update: `{"$set": {"a.$[].b": 0}}`,
			want: `{"_id": 1, "a": [{"b": 0}, {"c": 1, "b": 0}]}`, changed: true},
		{name: "all elements of empty array", doc: `{"_id": 1, "a": []}`, update: `{"$set": {"a.$[].b": 0}}`,
			want: `{"_id": 1, "a": []}`},
		{name: "all elements nested", doc: `{"_id": 1, "a": [{"b": [1, 2]}, {"b": [3]}]}`,
			update: `{"$inc": {"a.$[].b.$[]": 1}}`, want: `{"_id": 1, "a": [{"b": [2, 3]}, {"b": [4]}]}`, changed: true},
		{name: "all elements missing path", doc: `{"_id": 1}`, update: `{"$set": {"a.$[]": 1}}`,
			code: mongoerr.BadValue, msg: "The path 'a' must exist in the document in order to apply array updates."},
		{name: "all elements missing nested path", doc: `{"_id": 1, "a": [{"c": 1}]}`, update: `{"$set": {"a.$[].b.$[]": 1}}`,
			code: mongoerr.BadValue, msg: "The path 'a.0.b' must exist in the document in order to apply array updates."},
		{name: "all elements on non-array", doc: `{"_id": 1, "a": {"b": 1}}`, update: `{"$set": {"a.$[]": 1}}`,
			code: mongoerr.BadValue, msg: "Cannot apply array updates to non-array element a: { b: 1 }"},
		{name: "all elements on scalar elements", doc: `{"_id": 1, "a": [1]}`, update: `{"$set": {"a.$[].b": 1}}`,
			code: mongoerr.PathNotViable, msg: "Cannot create field 'b' in element {0: 1}"},
		{name: "filtered elements", doc: `{"_id": 1, "a": [1, 2, 1]}`, filters: []string{`{"x": 1}`},
			update: `{"$set": {"a.$[x]": 0}}`, want: `{"_id": 1, "a": [0, 2, 0]}`, changed: true},
		{name: "filter matching nothing", doc: `{"_id": 1, "a": [1, 2]}`, filters: []string{`{"x": 5}`},
			update: `{"$set": {"a.$[x]": 0}}`, want: `{"_id": 1, "a": [1, 2]}`},
		{name: "two filters, disjoint", doc: `{"_id": 1, "a": [1, 2, 3]}`, filters: []string{`{"x": 1}`, `{"y": 3}`},
			update: `{"$set": {"a.$[x]": 10, "a.$[y]": 30}}`, want: `{"_id": 1, "a": [10, 2, 30]}`, changed: true},
		{name: "two filters on one element conflict", doc: `{"_id": 1, "a": [1, 2]}`, filters: []string{`{"x": 1}`, `{"y": 1}`},
			update: `{"$set": {"a.$[x]": 10, "a.$[y]": 30}}`, code: mongoerr.ConflictingUpdateOperators,
			msg: "Update created a conflict at 'a.0'"},
		{name: "filter and all merge on fields", doc: `{"_id": 1, "a": [{"k": 1}, {"k": 2}]}`, filters: []string{`{"x": {"k": 2}}`},
			update: `{"$set": {"a.$[].p": 1, "a.$[x].q": 2}}`,
			want:   `{"_id": 1, "a": [{"k": 1, "p": 1}, {"k": 2, "p": 1, "q": 2}]}`, changed: true},
		{name: "all and filter conflict on field", doc: `{"_id": 1, "a": [{"k": 1}]}`, filters: []string{`{"x": {"k": 1}}`},
			update: `{"$set": {"a.$[].p": 1, "a.$[x].p": 2}}`, code: mongoerr.ConflictingUpdateOperators,
			msg: "Update created a conflict at 'a.0.p'"},
	})
}

// UsesPositional is true exactly when a path has "$", which is when
// Apply reads Context.Positional.
func TestUsesPositional(t *testing.T) {
	for update, want := range map[string]bool{
		`{"$set": {"a.$": 9}}`:                       true,
		`{"$inc": {"a.$.b": 5, "c": 1}}`:             true,
		`{"$set": {"a": 9}}`:                         false,
		`{"$set": {"a.$[].b": 0}}`:                   false,
		`{"$set": {"a.0.b": 0}, "$unset": {"c": 1}}`: false,
		`{"a": 1}`: false,
	} {
		u, err := Parse(ej(t, update), nil)
		if err != nil {
			t.Fatalf("%s: %v", update, err)
		}
		if got := u.UsesPositional(); got != want {
			t.Errorf("%s: UsesPositional = %v, want %v", update, got, want)
		}
	}
}
