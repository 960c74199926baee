package update

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// These cases need the query package: $pull conditions and array filters
// are queries.
func TestPullConditions(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "operator condition", doc: `{"_id": 1, "a": [1, 5, 7, 2]}`, update: `{"$pull": {"a": {"$gte": 5}}}`,
			want: `{"_id": 1, "a": [1, 2]}`, changed: true},
		{name: "in condition", doc: `{"_id": 1, "a": ["x", "y", "z"]}`, update: `{"$pull": {"a": {"$in": ["x", "z"]}}}`,
			want: `{"_id": 1, "a": ["y"]}`, changed: true},
		{name: "regex", doc: `{"_id": 1, "a": ["apple", "berry", "avocado"]}`,
			update: `{"$pull": {"a": {"$regularExpression": {"pattern": "^a", "options": ""}}}}`,
			want:   `{"_id": 1, "a": ["berry"]}`, changed: true},
		{name: "document query on elements", doc: `{"_id": 1, "a": [{"s": 8, "i": "B"}, {"s": 8, "i": "C"}, 8]}`,
			update: `{"$pull": {"a": {"s": 8, "i": "B"}}}`, want: `{"_id": 1, "a": [{"s": 8, "i": "C"}, 8]}`, changed: true},
		{name: "document query with operator fields", doc: `{"_id": 1, "a": [{"s": 1}, {"s": 9}]}`,
			update: `{"$pull": {"a": {"s": {"$gt": 5}}}}`, want: `{"_id": 1, "a": [{"s": 1}]}`, changed: true},
		{name: "document query is not exact match", doc: `{"_id": 1, "a": [{"s": 1, "t": 2}]}`,
			update: `{"$pull": {"a": {"s": 1}}}`, want: `{"_id": 1, "a": []}`, changed: true},
		{name: "empty document removes documents", doc: `{"_id": 1, "a": [{"s": 1}, 2, {}]}`,
			update: `{"$pull": {"a": {}}}`, want: `{"_id": 1, "a": [2]}`, changed: true},
		{name: "logical query on elements", doc: `{"_id": 1, "a": [{"s": 1}, {"s": 2}, {"s": 3}]}`,
			update: `{"$pull": {"a": {"$or": [{"s": 1}, {"s": 3}]}}}`, want: `{"_id": 1, "a": [{"s": 2}]}`, changed: true},
		{name: "elemMatch on nested arrays", doc: `{"_id": 1, "a": [[1, 2], [3, 4]]}`,
			update: `{"$pull": {"a": {"$elemMatch": {"$gt": 3}}}}`, want: `{"_id": 1, "a": [[1, 2]]}`, changed: true},
		{name: "nothing matches", doc: `{"_id": 1, "a": [1, 2]}`, update: `{"$pull": {"a": {"$gt": 5}}}`,
			want: `{"_id": 1, "a": [1, 2]}`},
		{name: "bad condition", doc: `{"_id": 1, "a": [1]}`, update: `{"$pull": {"a": {"$gt": 1, "$foo": 1}}}`,
			code: mongoerr.BadValue},
	})
}

func TestArrayFilterQueries(t *testing.T) {
	runCases(t, []caseSpec{
		{name: "comparison", doc: `{"_id": 1, "g": [95, 102, 90, 150]}`, filters: []string{`{"e": {"$gte": 100}}`},
			update: `{"$set": {"g.$[e]": 100}}`, want: `{"_id": 1, "g": [95, 100, 90, 100]}`, changed: true},
		{name: "field of element", doc: `{"_id": 1, "g": [{"s": 1, "m": 0}, {"s": 9, "m": 0}]}`,
			filters: []string{`{"e.s": {"$gt": 5}}`}, update: `{"$inc": {"g.$[e].m": 1}}`,
			want: `{"_id": 1, "g": [{"s": 1, "m": 0}, {"s": 9, "m": 1}]}`, changed: true},
		{name: "two conditions on one identifier", doc: `{"_id": 1, "g": [{"s": 1, "t": 1}, {"s": 1, "t": 2}]}`,
			filters: []string{`{"e.s": 1, "e.t": 2}`}, update: `{"$set": {"g.$[e].hit": true}}`,
			want: `{"_id": 1, "g": [{"s": 1, "t": 1}, {"s": 1, "t": 2, "hit": true}]}`, changed: true},
		{name: "identifier through or", doc: `{"_id": 1, "g": [1, 2, 3]}`,
			filters: []string{`{"$or": [{"e": 1}, {"e": 3}]}`}, update: `{"$set": {"g.$[e]": 0}}`,
			want: `{"_id": 1, "g": [0, 2, 0]}`, changed: true},
		{name: "nested identifiers", doc: `{"_id": 1, "a": [{"k": 1, "b": [1, 5]}, {"k": 2, "b": [5]}]}`,
			filters: []string{`{"o.k": 2}`, `{"i": 5}`}, update: `{"$set": {"a.$[o].b.$[i]": 0}}`,
			want: `{"_id": 1, "a": [{"k": 1, "b": [1, 5]}, {"k": 2, "b": [0]}]}`, changed: true},
		{name: "two names through and", update: `{"$set": {"a.$[x]": 1}}`,
			filters: []string{`{"$and": [{"x": 1}, {"y": 2}]}`}, code: mongoerr.FailedToParse,
			msg: "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'x' and 'y'"},
		{name: "query error gets context", update: `{"$set": {"a.$[x]": 1}}`,
			filters: []string{`{"x": {"$foo": 1}}`}, code: mongoerr.BadValue,
			msg: "Error parsing array filter :: caused by :: unknown operator: $foo"},
	})
}
