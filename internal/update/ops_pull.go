package update

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

// pullKey names the wrapper field for $pull conditions that apply to the
// element itself ({$gt: 5}, a regex); MongoDB wraps both sides the same way.
const pullKey = "v"

// parsePull picks MongoDB's three $pull matchers: a document condition
// without a leading operator is a query on document elements; an operator
// document or a regex is a condition on the element itself; anything else
// must equal the element.
func parsePull(v any, coll query.Collator) (modifier, error) {
	switch {
	case kindOf(v) == kindDoc && !startsWithOperator(docOf(v)):
		m, err := compileFilter(docOf(v), coll)
		return cullMod{match: func(x any) bool {
			return kindOf(x) == kindDoc && m.Match(docOf(plain(x)))
		}}, err
	case kindOf(v) == kindDoc || isRegex(v):
		m, err := compileFilter(bson.D{{Key: pullKey, Value: v}}, coll)
		return cullMod{match: func(x any) bool {
			return m.Match(bson.D{{Key: pullKey, Value: plain(x)}})
		}}, err
	}
	cmp := comparator(coll)
	return cullMod{match: func(x any) bool { return cmp(x, v) == 0 }}, nil
}

func isRegex(v any) bool {
	_, ok := v.(bson.Regex)
	return ok
}

// startsWithOperator reports whether a document's first field is one of the
// query operators that apply to a value (MongoDB's path-accepting keywords).
func startsWithOperator(d bson.D) bool {
	if len(d) == 0 {
		return false
	}
	switch d[0].Key {
	case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all", "$exists",
		"$mod", "$type", "$regex", "$options", "$elemMatch", "$size", "$not",
		"$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear",
		"$geoIntersects", "$geoWithin", "$within", "$near", "$nearSphere",
		"$maxDistance", "$minDistance":
		return true
	}
	return false
}
