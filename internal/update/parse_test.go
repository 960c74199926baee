package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestParseErrors(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "unknown modifier", update: `{"$foo": {"a": 1}}`, code: mongoerr.FailedToParse,
			msg: "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"},
		{name: "plain field after operator", update: `{"$set": {"a": 1}, "b": 1}`, code: mongoerr.FailedToParse,
			msg: "Unknown modifier: b. Expected a valid update modifier or pipeline-style update specified as an array"},
		{name: "operator after plain field", doc: `{"_id": 1}`, update: `{"b": 1, "$set": {"a": 1}}`,
			code: mongoerr.DollarPrefixedFieldName,
			msg: "The dollar ($) prefixed field '$set' in '$set' is not allowed in the context of an " +
				"update's replacement document. Consider using an aggregation pipeline with $replaceWith."},
		{name: "operator argument not a document", update: `{"$set": [{"a": 1}]}`, code: mongoerr.FailedToParse,
			msg: "Modifiers operate on fields but we found type array instead. For example: {$mod: {<field>: ...}} not {$set: [ { a: 1 } ]}"},
		{name: "internal version field", update: `{"$v": 1, "$set": {"a": 1}}`, code: mongoerr.FailedToParse,
			msg: "The $v update field is only recognized internally"},
		{name: "same path twice", update: `{"$set": {"a": 1}, "$inc": {"a": 1}}`, code: mongoerr.ConflictingUpdateOperators,
			msg: "Updating the path 'a' would create a conflict at 'a'"},
		{name: "child after parent", update: `{"$set": {"a": 1, "a.b": 1}}`, code: mongoerr.ConflictingUpdateOperators,
			msg: "Updating the path 'a.b' would create a conflict at 'a'"},
		{name: "parent after child", update: `{"$set": {"a.b.c": 1}, "$unset": {"a.b": 1}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.b' would create a conflict at 'a.b'"},
		{name: "siblings do not conflict", doc: `{"_id": 1}`, update: `{"$set": {"a.b": 1}, "$inc": {"a.c": 1}}`,
			want: `{"_id": 1, "a": {"b": 1, "c": 1}}`, changed: true},
		{name: "empty path", update: `{"$set": {"": 1}}`, code: codeEmptyFieldName,
			msg: "An empty update path is not valid."},
		{name: "empty component", update: `{"$set": {"a..b": 1}}`, code: codeEmptyFieldName,
			msg: "The update path 'a..b' contains an empty field name, which is not allowed."},
		{name: "trailing dot", update: `{"$unset": {"a.": 1}}`, code: codeEmptyFieldName,
			msg: "The update path 'a.' contains an empty field name, which is not allowed."},
		{name: "two positionals", update: `{"$set": {"a.$.b.$": 1}}`, code: mongoerr.BadValue,
			msg: "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"},
		{name: "positional first", update: `{"$set": {"$.a": 1}}`, code: mongoerr.BadValue,
			msg: "Cannot have positional (i.e. '$') element in the first position in path '$.a'"},
		{name: "array filter first", update: `{"$set": {"$[].a": 1}}`, code: mongoerr.BadValue,
			msg: "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[].a'"},
		{name: "array filter missing", update: `{"$set": {"a.$[x]": 1}}`, code: mongoerr.BadValue,
			msg: "No array filter found for identifier 'x' in path 'a.$[x]'"},
		{name: "array filter unused", update: `{"$set": {"a": 1}}`, filters: []string{`{"x": 1}`},
			code: mongoerr.FailedToParse,
			msg:  "The array filter for identifier 'x' was not used in the update { $set: { a: 1 } }"},
		{name: "array filter ignored by replacement", doc: `{"_id": 1}`, update: `{"a": 1}`,
			filters: []string{`{"x": 1}`}, want: `{"_id": 1, "a": 1}`, changed: true},
		{name: "bad array filter for replacement", update: `{"a": 1}`, filters: []string{`{}`},
			code: mongoerr.FailedToParse, msg: "Cannot use an expression without a top-level field name in arrayFilters"},
		{name: "array filter duplicate", update: `{"$set": {"a.$[x]": 1}}`, filters: []string{`{"x": 1}`, `{"x": 2}`},
			code: mongoerr.FailedToParse, msg: "Found multiple array filters with the same top-level field name x"},
		{name: "array filter two names", update: `{"$set": {"a.$[x]": 1}}`, filters: []string{`{"x": 1, "y": 2}`},
			code: mongoerr.FailedToParse,
			msg:  "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'x' and 'y'"},
		{name: "array filter empty", update: `{"$set": {"a.$[x]": 1}}`, filters: []string{`{}`},
			code: mongoerr.FailedToParse, msg: "Cannot use an expression without a top-level field name in arrayFilters"},
		{name: "array filter bad name", update: `{"$set": {"a.$[X]": 1}}`, filters: []string{`{"X": 1}`},
			code: mongoerr.BadValue,
			msg: "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric " +
				"string beginning with a lowercase letter, found 'X'"},
		{name: "positional conflicts with itself", update: `{"$set": {"a.$": 1}, "$inc": {"a.$": 1}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.$' would create a conflict at 'a.$'"},
		{name: "all positional conflicts with field", update: `{"$set": {"a.$[]": 1, "a.b": 1}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.b' would create a conflict at 'a'"},
		{name: "field then all positional", update: `{"$set": {"a.b": 1, "a.$[].c": 1}}`,
			code: mongoerr.ConflictingUpdateOperators, msg: "Updating the path 'a.$[].c' would create a conflict at 'a'"},
	})
}
