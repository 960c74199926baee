package validator

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/jsonschema"
	"github.com/mayflydb/mayfly/internal/query"
)

// FailureDetails explains why doc fails spec, clause by clause, in the
// shape mongod's validation error generator uses.
func FailureDetails(spec, doc bson.D) bson.D {
	if len(spec) == 1 {
		return clauseDetails(spec[0], doc)
	}
	return andDetails("$and", spec, doc)
}

func andDetails(op string, clauses bson.D, doc bson.D) bson.D {
	failed := bson.A{}
	for i, e := range clauses {
		if !clauseMatches(e, doc) {
			failed = append(failed, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: clauseDetails(e, doc)}})
		}
	}
	return bson.D{{Key: "operatorName", Value: op}, {Key: "clausesNotSatisfied", Value: failed}}
}

func clauseMatches(e bson.E, doc bson.D) bool {
	if e.Key == "$jsonSchema" {
		return len(schemaFailures(e.Value, doc)) == 0
	}
	f, err := query.NewFilter(bson.D{e})
	return err == nil && f.Match(doc)
}

func schemaFailures(spec any, doc bson.D) bson.A {
	d, _ := spec.(bson.D)
	s, err := jsonschema.Compile(d)
	if err != nil {
		return bson.A{}
	}
	return s.Failures(doc)
}

func clauseDetails(e bson.E, doc bson.D) bson.D {
	switch e.Key {
	case "$and", "$or", "$nor":
		return logicalDetails(e.Key, query.Clauses(e.Value), doc)
	case "$jsonSchema":
		return bson.D{{Key: "operatorName", Value: "$jsonSchema"}, {Key: "schemaRulesNotSatisfied", Value: schemaFailures(e.Value, doc)}}
	case "$expr":
		return bson.D{{Key: "operatorName", Value: "$expr"}, {Key: "specifiedAs", Value: bson.D{e}},
			{Key: "reason", Value: "expression did not match"}, {Key: "expressionResult", Value: false}}
	}
	ops, isOps := e.Value.(bson.D)
	if !isOps || len(ops) == 0 || ops[0].Key[0] != '$' {
		return opDetails(e.Key, bson.E{Key: "$eq", Value: e.Value}, bson.D{e}, doc)
	}
	if len(ops) == 1 {
		return opDetails(e.Key, ops[0], bson.D{e}, doc)
	}
	failed := bson.A{}
	for i, op := range ops {
		one := bson.E{Key: e.Key, Value: bson.D{op}}
		if !clauseMatches(one, doc) {
			failed = append(failed, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: opDetails(e.Key, op, bson.D{one}, doc)}})
		}
	}
	return bson.D{{Key: "operatorName", Value: "$and"}, {Key: "clausesNotSatisfied", Value: failed}}
}

func logicalDetails(op string, clauses []bson.D, doc bson.D) bson.D {
	entries := bson.A{}
	for i, c := range clauses {
		f, err := query.NewFilter(c)
		matched := err == nil && f.Match(doc)
		if (op == "$nor") != matched {
			continue
		}
		entries = append(entries, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: FailureDetails(c, doc)}})
	}
	key := "clausesNotSatisfied"
	if op == "$nor" {
		key = "clausesSatisfied"
	}
	return bson.D{{Key: "operatorName", Value: op}, {Key: key, Value: entries}}
}

// opDetails explains one operator on one path.
func opDetails(path string, op bson.E, specifiedAs bson.D, doc bson.D) bson.D {
	out := bson.D{{Key: "operatorName", Value: op.Key}, {Key: "specifiedAs", Value: specifiedAs}}
	values := bsonutil.PathValues(doc, path)
	if len(values) == 0 {
		reason := "field was missing"
		if op.Key == "$exists" {
			reason = "path does not exist"
		}
		return append(out, bson.E{Key: "reason", Value: reason})
	}
	v := values[0]
	switch op.Key {
	case "$exists":
		return append(out, bson.E{Key: "reason", Value: "path does exist"}, bson.E{Key: "consideredValue", Value: v})
	case "$type":
		return append(out, bson.E{Key: "reason", Value: "type did not match"}, bson.E{Key: "consideredValue", Value: v},
			bson.E{Key: "consideredType", Value: bsonutil.TypeName(v)})
	case "$in":
		return append(out, bson.E{Key: "reason", Value: "no matching value found in array"}, bson.E{Key: "consideredValue", Value: v})
	case "$nin":
		return append(out, bson.E{Key: "reason", Value: "matching value found in array"}, bson.E{Key: "consideredValue", Value: v})
	case "$regex":
		return append(out, bson.E{Key: "reason", Value: "regular expression did not match"}, bson.E{Key: "consideredValue", Value: v})
	}
	return append(out, bson.E{Key: "reason", Value: "comparison failed"}, bson.E{Key: "consideredValue", Value: v})
}
