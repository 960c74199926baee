// Package validator is a collection's schema validation: it checks a
// validator spec when create or collMod sets it, compiles the
// collection's validator, validationLevel and validationAction into one
// rule, and explains a refusal the way mongod's validation errors do
// (code 121 with errInfo). docstore applies the rule on every write.
package validator

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/jsonschema"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Validator is a collection's compiled validator and its settings.
type Validator struct {
	spec   bson.D
	filter *query.Filter      // the query operators, nil if none
	schema *jsonschema.Schema // $jsonSchema, nil if none
	level  string             // strict or moderate
	action string             // error or warn
}

// Check refuses what a validator may not hold, and what Mayfly does not
// evaluate, rather than accepting a rule it would not enforce.
func Check(spec bson.D) error {
	for _, e := range spec {
		switch e.Key {
		case "$jsonSchema":
			s, ok := e.Value.(bson.D)
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
			}
			if _, err := jsonschema.Compile(s); err != nil {
				return err
			}
		case "$near", "$nearSphere", "$text", "$where":
			return mongoerr.Newf(mongoerr.QueryFeatureNotAllowed, "%s is not allowed in this context", e.Key)
		}
	}
	rest, _ := splitSchema(spec)
	_, err := query.NewFilter(rest)
	return err
}

// Compile builds the validator of a collection from its options (as
// listCollections shows them): nil when it has none or its level is off.
// A stored validator was checked when it was set, so it compiles.
func Compile(options bson.D) *Validator {
	spec, ok := bsonutil.Field(options, "validator")
	d, isDoc := spec.(bson.D)
	if !ok || !isDoc || len(d) == 0 {
		return nil
	}
	v := &Validator{spec: d, level: "strict", action: "error"}
	if s, ok := bsonutil.Field(options, "validationLevel"); ok {
		v.level, _ = s.(string)
	}
	if s, ok := bsonutil.Field(options, "validationAction"); ok {
		v.action, _ = s.(string)
	}
	if v.level == "off" {
		return nil
	}
	rest, schema := splitSchema(d)
	if len(rest) > 0 {
		v.filter, _ = query.NewFilterWith(rest, query.FilterOptions{Collation: defaultCollator(options)})
	}
	if schema != nil {
		v.schema, _ = jsonschema.Compile(schema)
	}
	return v
}

// defaultCollator is the collection's default collation, which applies to
// its validator; a nil interface for simple.
func defaultCollator(options bson.D) query.Collator {
	cv, _ := bsonutil.Field(options, "collation")
	c, _ := collation.Parse(cv)
	if c == nil {
		return nil
	}
	return c
}

// splitSchema separates a validator's $jsonSchema (nil if none) from its
// query operators.
func splitSchema(spec bson.D) (rest, schema bson.D) {
	for _, e := range spec {
		if e.Key == "$jsonSchema" {
			schema, _ = e.Value.(bson.D)
			continue
		}
		rest = append(rest, e)
	}
	return rest, schema
}

// Matches reports whether doc satisfies the validator.
func (v *Validator) Matches(doc bson.D) bool {
	return (v.filter == nil || v.filter.Match(doc)) && (v.schema == nil || v.schema.Match(doc))
}

// Verdict is what the validator decides about one write.
type Verdict int

const (
	// Allow stores the document.
	Allow Verdict = iota
	// Warn stores it and logs that it fails validation (action warn).
	Warn
	// Refuse fails the write with Error.
	Refuse
)

// Judge decides about doc, which replaces old (nil for an insert). Under
// level moderate a document already invalid may change freely.
func (v *Validator) Judge(doc, old bson.D) Verdict {
	if v.Matches(doc) {
		return Allow
	}
	if v.level == "moderate" && old != nil && !v.Matches(old) {
		return Allow
	}
	if v.action == "warn" {
		return Warn
	}
	return Refuse
}

// Error is mongod's 121 for doc, with errInfo {failingDocumentId, details}.
func (v *Validator) Error(doc bson.D) error {
	id, _ := bsonutil.Field(doc, "_id")
	return &mongoerr.Error{
		Code: mongoerr.DocumentValidationFailure,
		Msg:  "Document failed validation",
		Extra: []mongoerr.KV{{Key: "errInfo", Value: bson.D{
			{Key: "failingDocumentId", Value: id},
			{Key: "details", Value: FailureDetails(v.spec, doc)},
		}}},
	}
}
