package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestRename(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "simple", doc: `{"_id": 1, "a": 1, "b": 2}`, update: `{"$rename": {"a": "c"}}`,
			want: `{"_id": 1, "b": 2, "c": 1}`, changed: true},
		{name: "over existing keeps its position", doc: `{"_id": 1, "a": 1, "b": 2, "c": 3}`,
			update: `{"$rename": {"c": "a"}}`, want: `{"_id": 1, "a": 3, "b": 2}`, changed: true},
		{name: "same value still a change", doc: `{"_id": 1, "a": 1, "b": 1}`, update: `{"$rename": {"a": "b"}}`,
			want: `{"_id": 1, "b": 1}`, changed: true},
		{name: "missing source is no-op", doc: `{"_id": 1, "b": 2}`, update: `{"$rename": {"a": "c"}}`,
			want: `{"_id": 1, "b": 2}`},
		{name: "nested to top", doc: `{"_id": 1, "a": {"b": {"c": 1}, "d": 2}}`, update: `{"$rename": {"a.b": "x.y"}}`,
			want: `{"_id": 1, "a": {"d": 2}, "x": {"y": {"c": 1}}}`, changed: true},
		{name: "within one document", doc: `{"_id": 1, "a": {"b": 1, "c": 2}}`, update: `{"$rename": {"a.b": "a.z"}}`,
			want: `{"_id": 1, "a": {"c": 2, "z": 1}}`, changed: true},
		{name: "with other operators", doc: `{"_id": 1, "a": 1, "m": 0}`, update: `{"$rename": {"a": "z"}, "$inc": {"m": 1}}`,
			want: `{"_id": 1, "m": 1, "z": 1}`, changed: true},
		{name: "array value moves", doc: `{"_id": 1, "a": [1, 2]}`, update: `{"$rename": {"a": "b"}}`,
			want: `{"_id": 1, "b": [1, 2]}`, changed: true},
		{name: "source inside array", doc: `{"_id": 1, "a": [{"b": 1}]}`, update: `{"$rename": {"a.0.b": "c"}}`,
			code: mongoerr.BadValue,
			msg:  "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'"},
		{name: "destination inside array", doc: `{"_id": 1, "a": [{"b": 1}], "c": 1}`, update: `{"$rename": {"c": "a.0.d"}}`,
			code: mongoerr.BadValue,
			msg:  "The destination field cannot be an array element, 'a.0.d' in doc with _id: 1 has an array field called 'a'"},
		{name: "source through scalar", doc: `{"_id": 1, "a": 1}`, update: `{"$rename": {"a.b": "c"}}`,
			code: mongoerr.PathNotViable, msg: "cannot use the part (a of a.b) to traverse the element ({a: 1})"},
		{name: "to must be string", update: `{"$rename": {"a": 1}}`, code: mongoerr.BadValue,
			msg: "The 'to' field for $rename must be a string: a: 1"},
		{name: "same path", update: `{"$rename": {"a": "a"}}`, code: mongoerr.BadValue,
			msg: `The source and target field for $rename must differ: a: "a"`},
		{name: "prefix", update: `{"$rename": {"a": "a.b"}}`, code: mongoerr.BadValue,
			msg: `The source and target field for $rename must not be on the same path: a: "a.b"`},
		{name: "two renames onto one path", update: `{"$rename": {"a": "c", "b": "c"}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'c' would create a conflict at 'c'"},
		{name: "dynamic source", update: `{"$rename": {"a.$": "b"}}`, code: mongoerr.BadValue,
			msg: "The source field for $rename may not be dynamic: a.$"},
		{name: "dynamic destination", update: `{"$rename": {"a": "b.$[]"}}`, code: mongoerr.BadValue,
			msg: "The destination field for $rename may not be dynamic: b.$[]"},
		{name: "conflicts with set on source", update: `{"$rename": {"a": "b"}, "$set": {"a": 1}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a' would create a conflict at 'a'"},
		{name: "rename id", doc: `{"_id": 1}`, update: `{"$rename": {"_id": "x"}}`, code: mongoerr.ImmutableField,
			msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{name: "rename onto id", doc: `{"_id": 1, "x": 2}`, update: `{"$rename": {"x": "_id"}}`, code: mongoerr.ImmutableField,
			msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
	})
}

func TestReplacement(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "keeps old id first", doc: `{"_id": 1, "a": 1, "b": 2}`, update: `{"c": 3, "d": 4}`,
			want: `{"_id": 1, "c": 3, "d": 4}`, changed: true},
		{name: "same id allowed", doc: `{"_id": 1, "a": 1}`, update: `{"b": 2, "_id": 1}`,
			want: `{"b": 2, "_id": 1}`, changed: true},
		{name: "equal id of other type allowed", doc: `{"_id": 1, "a": 1}`, update: `{"_id": 1.0, "b": 1}`,
			want: `{"_id": 1.0, "b": 1}`, changed: true},
		{name: "changed id", doc: `{"_id": 1, "a": 1}`, update: `{"_id": 2}`, code: mongoerr.ImmutableField,
			msg: "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"},
		{name: "identical is no-op", doc: `{"_id": 1, "a": 1}`, update: `{"a": 1}`, want: `{"_id": 1, "a": 1}`},
		{name: "empty replacement", doc: `{"_id": 1, "a": 1}`, update: `{}`, want: `{"_id": 1}`, changed: true},
		{name: "dollar field", doc: `{"_id": 1}`, update: `{"a": 1, "$b": 1}`, code: mongoerr.DollarPrefixedFieldName,
			msg: "The dollar ($) prefixed field '$b' in '$b' is not allowed in the context of an " +
				"update's replacement document. Consider using an aggregation pipeline with $replaceWith."},
		{name: "nested dollar allowed", doc: `{"_id": 1}`, update: `{"a": {"$b": 1}}`,
			want: `{"_id": 1, "a": {"$b": 1}}`, changed: true},
		{name: "dbref fields allowed", doc: `{"_id": 1}`, update: `{"x": 1, "$ref": "c", "$id": 1}`,
			want: `{"_id": 1, "x": 1, "$ref": "c", "$id": 1}`, changed: true},
		{name: "leading dollar makes an operator update", doc: `{"_id": 1}`, update: `{"$ref": "c", "$id": 1}`,
			code: mongoerr.FailedToParse},
		{name: "array id", doc: `{"a": 1}`, insert: true, update: `{"_id": [1]}`, code: mongoerr.InvalidIDField,
			msg: "The '_id' value cannot be of type array"},
		{name: "insert puts id first", doc: `{}`, insert: true, update: `{"a": 1, "_id": 5}`,
			want: `{"_id": 5, "a": 1}`, changed: true},
		{name: "zero timestamp filled", doc: `{"_id": 1}`, update: `{"t": {"$timestamp": {"t": 0, "i": 0}}}`,
			want: `{"_id": 1, "t": {"$timestamp": {"t": 1714979289, "i": 1}}}`, changed: true},
		{name: "is replacement", doc: `{"_id": 1}`, update: `{"x": 1}`, want: `{"_id": 1, "x": 1}`, changed: true},
	})
}

func TestIsReplacement(t *testing.T) {
	for _, c := range []struct {
		u    string
		want bool
	}{{`{"a": 1}`, true}, {`{}`, true}, {`{"$set": {"a": 1}}`, false}} {
		u, err := Parse(ej(t, c.u), nil)
		if err != nil {
			t.Fatal(err)
		}
		if u.IsReplacement() != c.want {
			t.Errorf("%s: IsReplacement = %v", c.u, !c.want)
		}
	}
}
