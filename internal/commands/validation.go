package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/jsonschema"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Schema validation: a collection's validator (a query filter) is checked
// on every insert and update unless the command bypasses it. The
// options live in the collection's catalog options, as listCollections
// shows them; docstore calls back through WriteOptions.Validate.

// validation is a collection's parsed validator and its settings.
type validation struct {
	spec   bson.D
	filter *query.Filter      // the query operators, nil if none
	schema *jsonschema.Schema // $jsonSchema, nil if none
	level  string             // strict, moderate, off
	action string             // error, warn
}

// validationOptions reads validator, validationLevel and validationAction
// from a create or collMod command; ok is false when none is there.
func validationOptions(body bson.D, cmd string) (opts bson.D, ok bool, err error) {
	v, hasValidator := bsonutil.Field(body, "validator")
	level, hasLevel := bsonutil.Field(body, "validationLevel")
	action, hasAction := bsonutil.Field(body, "validationAction")
	if !hasValidator && !hasLevel && !hasAction {
		return nil, false, nil
	}
	if hasValidator {
		d, isDoc := v.(bson.D)
		if !isDoc {
			return nil, false, wrongType(cmd, "validator", v, "object")
		}
		if err := checkValidator(d); err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validator", Value: d})
	}
	if hasLevel {
		s, err := enumArg(cmd+".validationLevel", level, "off", "strict", "moderate")
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validationLevel", Value: s})
	}
	if hasAction {
		s, err := enumArg(cmd+".validationAction", action, "error", "warn")
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validationAction", Value: s})
	}
	return opts, true, nil
}

// checkValidator refuses what a validator may not hold, and what Mayfly
// does not evaluate yet ($jsonSchema), rather than accepting a rule it
// would not enforce.
func checkValidator(d bson.D) error {
	for _, e := range d {
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
	_, err := query.NewFilter(withoutField(d, "$jsonSchema"))
	return err
}

// withValidationDefaults gives a validator mongod's defaults for the
// level and action, as listCollections reports them.
func withValidationDefaults(opts bson.D) bson.D {
	if _, ok := bsonutil.Field(opts, "validator"); !ok {
		return opts
	}
	if _, ok := bsonutil.Field(opts, "validationLevel"); !ok {
		opts = append(opts, bson.E{Key: "validationLevel", Value: "strict"})
	}
	if _, ok := bsonutil.Field(opts, "validationAction"); !ok {
		opts = append(opts, bson.E{Key: "validationAction", Value: "error"})
	}
	return opts
}

// validationOf returns the collection's validation, nil when it has none
// or its level is off.
func validationOf(meta *catalog.Collection) *validation {
	spec, ok := bsonutil.Field(meta.Options, "validator")
	d, isDoc := spec.(bson.D)
	if !ok || !isDoc || len(d) == 0 {
		return nil
	}
	v := &validation{spec: d, level: "strict", action: "error"}
	if s, ok := bsonutil.Field(meta.Options, "validationLevel"); ok {
		v.level, _ = s.(string)
	}
	if s, ok := bsonutil.Field(meta.Options, "validationAction"); ok {
		v.action, _ = s.(string)
	}
	if v.level == "off" {
		return nil
	}
	// Checked when it was set; a stored validator always compiles.
	if rest := withoutField(d, "$jsonSchema"); len(rest) > 0 {
		// The collection's default collation applies to its validator.
		cv, _ := bsonutil.Field(meta.Options, "collation")
		coll, _ := collation.Parse(cv)
		v.filter, _ = query.NewFilterWith(rest, query.FilterOptions{Collation: collator(coll)})
	}
	if s, ok := bsonutil.Field(d, "$jsonSchema"); ok {
		sd, _ := s.(bson.D)
		v.schema, _ = jsonschema.Compile(sd)
	}
	return v
}

// matches reports whether doc satisfies the validator.
func (v *validation) matches(doc bson.D) bool {
	return (v.filter == nil || v.filter.Match(doc)) && (v.schema == nil || v.schema.Match(doc))
}

// documentValidator is the WriteOptions.Validate of a command writing to
// db.coll; nil when the command bypasses validation.
func (h *Handler) documentValidator(db, coll string, bypass bool) func(doc, old bson.D) error {
	return func(doc, old bson.D) error {
		c := h.deps.Store.Collection(db, coll)
		if c == nil {
			return nil
		}
		if old == nil {
			if err := collatedIDError(c, doc); err != nil {
				return err
			}
		}
		if err := checkMeasurement(c.Meta(), doc); err != nil {
			return err
		}
		if bypass {
			return nil
		}
		v := validationOf(c.Meta())
		if v == nil || v.matches(doc) {
			return nil
		}
		if v.level == "moderate" && old != nil && !v.matches(old) {
			return nil // moderate: documents already invalid may change
		}
		if v.action == "warn" {
			h.deps.Logger.Warn("Document would fail validation", "namespace", db+"."+coll)
			return nil
		}
		return validationError(v.spec, doc)
	}
}

// bypassArg reads bypassDocumentValidation.
func bypassArg(r *request) (bool, error) {
	return optBool(r, "bypassDocumentValidation")
}

// validationError is mongod's 121 with errInfo {failingDocumentId, details}.
func validationError(spec, doc bson.D) error {
	id, _ := bsonutil.Field(doc, "_id")
	return &mongoerr.Error{
		Code: mongoerr.DocumentValidationFailure,
		Msg:  "Document failed validation",
		Extra: []mongoerr.KV{{Key: "errInfo", Value: bson.D{
			{Key: "failingDocumentId", Value: id},
			{Key: "details", Value: failureDetails(spec, doc)},
		}}},
	}
}

// failureDetails explains why doc fails spec, clause by clause, in the
// shape mongod's validation error generator uses.
func failureDetails(spec, doc bson.D) bson.D {
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
		entries = append(entries, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: failureDetails(c, doc)}})
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

func isValidationOption(k string) bool {
	return k == "validator" || k == "validationLevel" || k == "validationAction"
}

// collModValidation applies collMod's validation options.
func collModValidation(e *docstore.CatalogEdit, r *request) error {
	opts, ok, err := validationOptions(r.body, "collMod")
	if err != nil || !ok {
		return err
	}
	e.SetOptions(withValidationDefaults(mergeFields(e.Meta().Options, opts)))
	return nil
}

// commandValidator is documentValidator for the command's collection, with
// its bypassDocumentValidation.
func (h *Handler) commandValidator(r *request, coll string) (func(doc, old bson.D) error, error) {
	bypass, err := bypassArg(r)
	if err != nil {
		return nil, err
	}
	return h.documentValidator(r.db, coll, bypass), nil
}
