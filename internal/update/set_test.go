package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestSetUnset(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "set existing keeps position", doc: `{"_id": 1, "a": 1, "b": 2}`,
			update: `{"$set": {"a": 5}}`, want: `{"_id": 1, "a": 5, "b": 2}`, changed: true},
		{name: "set new field appended", doc: `{"_id": 1, "b": 2}`,
			update: `{"$set": {"a": 5}}`, want: `{"_id": 1, "b": 2, "a": 5}`, changed: true},
		{name: "new fields in lexicographic order", doc: `{"_id": 1}`,
			update: `{"$set": {"c": 1, "a": 2, "b": 3}}`, want: `{"_id": 1, "a": 2, "b": 3, "c": 1}`, changed: true},
		{name: "fields across operators in path order", doc: `{"_id": 1}`,
			update: `{"$set": {"z": 1}, "$inc": {"m": 1}, "$min": {"a": 1}}`,
			want:   `{"_id": 1, "a": 1, "m": 1, "z": 1}`, changed: true},
		{name: "numeric names in numeric order", doc: `{"_id": 1, "a": {}}`,
			update: `{"$set": {"a.10": 1, "a.9": 2, "a.x": 3, "a.09": 4}}`,
			want:   `{"_id": 1, "a": {"09": 4, "9": 2, "10": 1, "x": 3}}`, changed: true},
		{name: "same value same type is no-op", doc: `{"_id": 1, "a": 1}`,
			update: `{"$set": {"a": 1}}`, want: `{"_id": 1, "a": 1}`, changed: false},
		{name: "same value other type is a change", doc: `{"_id": 1, "a": 1}`,
			update: `{"$set": {"a": 1.0}}`, want: `{"_id": 1, "a": 1.0}`, changed: true},
		{name: "same document value is no-op", doc: `{"_id": 1, "a": {"b": [1, {"c": "x"}]}}`,
			update: `{"$set": {"a": {"b": [1, {"c": "x"}]}}}`, want: `{"_id": 1, "a": {"b": [1, {"c": "x"}]}}`},
		{name: "reordered document value is a change", doc: `{"_id": 1, "a": {"b": 1, "c": 2}}`,
			update: `{"$set": {"a": {"c": 2, "b": 1}}}`, want: `{"_id": 1, "a": {"c": 2, "b": 1}}`, changed: true},
		{name: "dotted creates nested documents", doc: `{"_id": 1}`,
			update: `{"$set": {"a.b.c": 1}}`, want: `{"_id": 1, "a": {"b": {"c": 1}}}`, changed: true},
		{name: "sibling paths share created parent", doc: `{"_id": 1}`,
			update: `{"$set": {"a.c": 1, "a.b": 2}}`, want: `{"_id": 1, "a": {"b": 2, "c": 1}}`, changed: true},
		{name: "dotted into existing document", doc: `{"_id": 1, "a": {"x": 1}}`,
			update: `{"$set": {"a.b": 2}}`, want: `{"_id": 1, "a": {"x": 1, "b": 2}}`, changed: true},
		{name: "array index existing", doc: `{"_id": 1, "a": [1, 2, 3]}`,
			update: `{"$set": {"a.1": 9}}`, want: `{"_id": 1, "a": [1, 9, 3]}`, changed: true},
		{name: "array index pads with nulls", doc: `{"_id": 1, "a": [1]}`,
			update: `{"$set": {"a.3": 9}}`, want: `{"_id": 1, "a": [1, null, null, 9]}`, changed: true},
		{name: "array index then field creates document", doc: `{"_id": 1, "a": []}`,
			update: `{"$set": {"a.1.b": 9}}`, want: `{"_id": 1, "a": [null, {"b": 9}]}`, changed: true},
		{name: "field of array element", doc: `{"_id": 1, "a": [{"b": 1}, {"b": 2}]}`,
			update: `{"$set": {"a.1.b": 9}}`, want: `{"_id": 1, "a": [{"b": 1}, {"b": 9}]}`, changed: true},
		{name: "numeric field of document", doc: `{"_id": 1, "a": {"0": 1}}`,
			update: `{"$set": {"a.0": 2, "b.0": 3}}`, want: `{"_id": 1, "a": {"0": 2}, "b": {"0": 3}}`, changed: true},
		{name: "cannot create field in scalar", doc: `{"_id": 1, "a": 1}`,
			update: `{"$set": {"a.b": 1}}`, code: mongoerr.PathNotViable,
			msg: "Cannot create field 'b' in element {a: 1}"},
		{name: "cannot create named field in array", doc: `{"_id": 1, "a": [1, 2]}`,
			update: `{"$set": {"a.b": 1}}`, code: mongoerr.PathNotViable,
			msg: "Cannot create field 'b' in element {a: [ 1, 2 ]}"},
		{name: "cannot create below array element scalar", doc: `{"_id": 1, "a": [1, 2]}`,
			update: `{"$set": {"a.0.b": 1}}`, code: mongoerr.PathNotViable,
			msg: "Cannot create field 'b' in element {0: 1}"},
		{name: "backfill limit", doc: `{"_id": 1, "a": []}`,
			update: `{"$set": {"a.1500001": 1}}`, code: codeCannotBackfillArray,
			msg: "can't backfill more than 1500000 elements"},
		{name: "unset existing", doc: `{"_id": 1, "a": 1, "b": 2}`,
			update: `{"$unset": {"a": ""}}`, want: `{"_id": 1, "b": 2}`, changed: true},
		{name: "unset missing is no-op", doc: `{"_id": 1, "b": 2}`,
			update: `{"$unset": {"a": 1, "b.c.d": 1}}`, want: `{"_id": 1, "b": 2}`},
		{name: "unset array element sets null", doc: `{"_id": 1, "a": [1, 2, 3]}`,
			update: `{"$unset": {"a.1": 1}}`, want: `{"_id": 1, "a": [1, null, 3]}`, changed: true},
		{name: "unset nested", doc: `{"_id": 1, "a": {"b": 1, "c": 2}}`,
			update: `{"$unset": {"a.b": 1}}`, want: `{"_id": 1, "a": {"c": 2}}`, changed: true},
		{name: "unset id", doc: `{"_id": 1}`, update: `{"$unset": {"_id": 1}}`,
			code: mongoerr.ImmutableField,
			msg:  "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{name: "set id to other value", doc: `{"_id": 1, "a": 1}`, update: `{"$set": {"_id": 2}}`,
			code: mongoerr.ImmutableField,
			msg:  "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{name: "set id to same value is allowed", doc: `{"_id": 1, "a": 1}`,
			update: `{"$set": {"_id": 1, "a": 2}}`, want: `{"_id": 1, "a": 2}`, changed: true},
		{name: "set inside id", doc: `{"_id": {"x": 1}}`, update: `{"$set": {"_id.x": 2}}`,
			code: mongoerr.ImmutableField,
			msg:  "Performing an update on the path '_id.x' would modify the immutable field '_id'"},
		{name: "add field inside id", doc: `{"_id": {"x": 1}}`, update: `{"$set": {"_id.y": 2}}`,
			code: mongoerr.ImmutableField,
			msg:  "Updating the path '_id' to _id: { x: 1, y: 2 } would modify the immutable field '_id'"},
		{name: "top-level dollar field", doc: `{"_id": 1}`, update: `{"$set": {"$x": 1}}`,
			code: mongoerr.DollarPrefixedFieldName,
			msg: "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an " +
				"update's replacement document. Consider using an aggregation pipeline with $replaceWith."},
		{name: "nested dollar field allowed", doc: `{"_id": 1}`, update: `{"$set": {"a.$x": 1}}`,
			want: `{"_id": 1, "a": {"$x": 1}}`, changed: true},
		{name: "set on insert only on insert", doc: `{"_id": 1}`,
			update: `{"$setOnInsert": {"a": 1}, "$set": {"b": 2}}`, want: `{"_id": 1, "b": 2}`, changed: true},
		{name: "set on insert when inserting", doc: `{"_id": 1}`, insert: true,
			update: `{"$setOnInsert": {"a": 1}}`, want: `{"_id": 1, "a": 1}`, changed: true},
		{name: "insert moves id first", doc: `{"a": 1}`, insert: true,
			update: `{"$set": {"_id": 7}}`, want: `{"_id": 7, "a": 1}`, changed: true},
		{name: "insert rejects array id", doc: `{"a": 1}`, insert: true,
			update: `{"$set": {"_id": [1]}}`, code: mongoerr.InvalidIDField,
			msg: "The '_id' value cannot be of type array"},
		{name: "empty operator is a no-op", doc: `{"_id": 1}`, update: `{"$set": {}}`, want: `{"_id": 1}`},
	})
}

func TestDepthLimit(t *testing.T) {
	deep := `1`
	for range 180 {
		deep = `{"a": ` + deep + `}`
	}
	runCases(t, []caseSpec{
		{name: "too deep", doc: `{"_id": 1}`, update: `{"$set": {"x": ` + deep + `}}`,
			code: mongoerr.Overflow, msg: "Document exceeds maximum nesting depth of 180"},
		{name: "deep enough", doc: `{"_id": 1}`, update: `{"$set": {"x": ` + deep[6:len(deep)-1] + `}}`,
			want: `{"_id": 1, "x": ` + deep[6:len(deep)-1] + `}`, changed: true},
	})
}
