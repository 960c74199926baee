package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestUpsertSeed(t *testing.T) {
	for _, c := range []struct {
		name, eqs, want string
		code            mongoerr.Code
		msg             string
	}{
		{name: "plain", eqs: `{"a": 1, "b": "x"}`, want: `{"a": 1, "b": "x"}`},
		{name: "id first", eqs: `{"a": 1, "_id": 5}`, want: `{"_id": 5, "a": 1}`},
		{name: "dotted builds documents", eqs: `{"a.b": 1, "a.c": 2, "d.0": 3}`,
			want: `{"a": {"b": 1, "c": 2}, "d": {"0": 3}}`},
		{name: "dotted id", eqs: `{"x": 1, "_id.k": 2}`, want: `{"_id": {"k": 2}, "x": 1}`},
		{name: "empty", eqs: `{}`, want: `{}`},
		{name: "path twice", eqs: `{"a": 1, "a": 2}`, code: mongoerr.NotSingleValueField,
			msg: "cannot infer query fields to set, path 'a' is matched twice"},
		{name: "child of matched", eqs: `{"a": 1, "a.b": 2}`, code: mongoerr.NotSingleValueField,
			msg: "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"},
		{name: "parent of matched", eqs: `{"a.b": 1, "a": 2}`, code: mongoerr.NotSingleValueField,
			msg: "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := UpsertSeed(ej(t, c.eqs))
			if c.code != 0 {
				checkErr(t, err, c.code, c.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := ej(t, c.want); !identicalDocs(got, want) {
				t.Fatalf("got %s, want %s", formatValue(got), formatValue(want))
			}
		})
	}
}

// TestUpsertFlow runs an upsert the way the command layer does: seed from
// the query, then apply the update as an insert.
func TestUpsertFlow(t *testing.T) {
	seed, err := UpsertSeed(ej(t, `{"_id": 7, "user.name": "ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	u, err := Parse(ej(t, `{"$setOnInsert": {"created": true}, "$inc": {"logins": 1}, "$set": {"user.seen": 1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, changed, err := u.Apply(seed, Context{Now: testNow, IsInsert: true, Positional: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := ej(t, `{"_id": 7, "user": {"name": "ann", "seen": 1}, "created": true, "logins": 1}`)
	if !changed || !identicalDocs(got, want) {
		t.Fatalf("got %s (changed %v)", formatValue(got), changed)
	}
}
