package integration

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// legacySessions are the sessions every legacy test may use.
var legacySessions = []string{"session0", "session1"}

// legacyEntities names the unified entities one legacy test uses: a
// database and a collection entity per distinct databaseOptions and
// collectionOptions its operations carry.
type legacyEntities struct {
	file        legacyFile
	databases   []bson.D // entity definitions, in order of first use
	collections []bson.D
	byOptions   map[string]string // "database|options" or "collection|options" → entity id
}

func newLegacyEntities(f legacyFile) *legacyEntities {
	return &legacyEntities{file: f, byOptions: map[string]string{}}
}

// database returns the entity of the test's database with options.
func (e *legacyEntities) database(options bson.D) string {
	key := "database|" + fmt.Sprint(options)
	if id, ok := e.byOptions[key]; ok {
		return id
	}
	id := fmt.Sprintf("database%d", len(e.databases))
	def := bson.D{{Key: "id", Value: id}, {Key: "client", Value: "client0"}, {Key: "databaseName", Value: e.file.database}}
	if options != nil {
		def = append(def, bson.E{Key: "databaseOptions", Value: options})
	}
	e.databases = append(e.databases, def)
	e.byOptions[key] = id
	return id
}

// collection returns the entity of the test's collection with options, in
// the database with dbOptions.
func (e *legacyEntities) collection(options, dbOptions bson.D) string {
	key := "collection|" + fmt.Sprint(options, dbOptions)
	if id, ok := e.byOptions[key]; ok {
		return id
	}
	id := fmt.Sprintf("collection%d", len(e.collections))
	def := bson.D{{Key: "id", Value: id}, {Key: "database", Value: e.database(dbOptions)}, {Key: "collectionName", Value: e.file.collection}}
	if options != nil {
		def = append(def, bson.E{Key: "collectionOptions", Value: options})
	}
	e.collections = append(e.collections, def)
	e.byOptions[key] = id
	return id
}

// create is the test's first operation: its client, sessions, databases
// and collections.
func (e *legacyEntities) create(test bson.D) bson.D {
	e.database(nil) // the default database, even when no operation names it
	client := bson.D{{Key: "id", Value: "client0"}, {Key: "observeEvents", Value: bson.A{"commandStartedEvent"}}}
	if opts := docField(test, "clientOptions"); opts != nil {
		client = append(client, bson.E{Key: "uriOptions", Value: opts})
	}
	if multi, ok := legacyField(test, "useMultipleMongoses"); ok {
		client = append(client, bson.E{Key: "useMultipleMongoses", Value: multi})
	}
	ents := bson.A{bson.D{{Key: "client", Value: client}}}
	for _, db := range e.databases {
		ents = append(ents, bson.D{{Key: "database", Value: db}})
	}
	for _, coll := range e.collections {
		ents = append(ents, bson.D{{Key: "collection", Value: coll}})
	}
	sessionOptions := docField(test, "sessionOptions")
	for _, s := range legacySessions {
		def := bson.D{{Key: "id", Value: s}, {Key: "client", Value: "client0"}}
		if opts := docField(sessionOptions, s); opts != nil {
			def = append(def, bson.E{Key: "sessionOptions", Value: opts})
		}
		ents = append(ents, bson.D{{Key: "session", Value: def}})
	}
	return testRunnerOp("createEntities", bson.D{{Key: "entities", Value: ents}})
}

// operations translates a list of legacy operations.
func (e *legacyEntities) operations(ops bson.A) (bson.A, error) {
	out := bson.A{}
	for i, op := range ops {
		translated, err := e.operation(op.(bson.D))
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		out = append(out, translated)
	}
	return out, nil
}

// legacyArgs rewrites one operation's arguments into the unified
// runner's; name and object may change too (count).
type legacyArgs func(e *legacyEntities, op *unifiedOp) error

// unifiedOp is an operation being translated.
type unifiedOp struct {
	name, object string
	args         bson.D
	legacy       bson.D
}

// legacyOperations is every legacy operation the translator knows, by
// name; an operation not here fails the translation. (A function, since
// withTransaction's callback translates operations in turn.)
func legacyOperations() map[string]legacyArgs {
	return map[string]legacyArgs{
		"startTransaction": flattenOptions, "commitTransaction": flattenOptions, "abortTransaction": flattenOptions,
		"withTransaction": withTransactionArgs,
		"aggregate":       flattenOptions, "bulkWrite": bulkWriteArgs, "count": countArgs,
		"countDocuments": withFilter, "distinct": withFilter, "find": withFilter,
		"createIndex": flattenOptions, "deleteMany": flattenOptions, "deleteOne": flattenOptions,
		"findOneAndDelete": flattenOptions, "findOneAndReplace": flattenOptions, "findOneAndUpdate": flattenOptions,
		"insertMany": flattenOptions, "insertOne": flattenOptions, "replaceOne": flattenOptions,
		"updateMany": flattenOptions, "updateOne": flattenOptions,
		"createCollection": flattenOptions, "dropCollection": flattenOptions, "runCommand": runCommandArgs,
		"targetedFailPoint": flattenOptions, "assertSessionPinned": flattenOptions,
		"assertSessionUnpinned": flattenOptions, "assertSessionTransactionState": flattenOptions,
		"assertCollectionExists": namespaceArgs, "assertCollectionNotExists": namespaceArgs,
		"assertIndexExists": namespaceArgs, "assertIndexNotExists": namespaceArgs,
	}
}

func (e *legacyEntities) operation(legacy bson.D) (bson.D, error) {
	if err := onlyKeys(legacy, "name", "object", "arguments", "result", "error", "collectionOptions",
		"databaseOptions", "command_name"); err != nil {
		return nil, err
	}
	op := &unifiedOp{name: strField(legacy, "name"), args: docField(legacy, "arguments"), legacy: legacy}
	object, err := e.object(legacy)
	if err != nil {
		return nil, err
	}
	op.object = object
	rewrite, ok := legacyOperations()[op.name]
	if !ok {
		return nil, fmt.Errorf("unknown legacy operation %q", op.name)
	}
	if err := rewrite(e, op); err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	out := bson.D{{Key: "name", Value: op.name}, {Key: "object", Value: op.object}}
	if op.args != nil {
		out = append(out, bson.E{Key: "arguments", Value: op.args})
	}
	return append(out, expectation(legacy)...), nil
}

// object maps a legacy object name to its entity.
func (e *legacyEntities) object(legacy bson.D) (string, error) {
	collOpts, dbOpts := docField(legacy, "collectionOptions"), docField(legacy, "databaseOptions")
	switch name := strField(legacy, "object"); name {
	case "collection":
		return e.collection(collOpts, dbOpts), nil
	case "database":
		return e.database(dbOpts), nil
	case "session0", "session1", "testRunner":
		return name, nil
	default:
		return "", fmt.Errorf("unknown legacy object %q", name)
	}
}

// legacyErrorFields are the fields of a legacy result that expect an error.
var legacyErrorFields = []string{"errorContains", "errorCodeName", "errorLabelsContain", "errorLabelsOmit", "errorCode"}

// expectation turns a legacy result (or error: true) into expectError or
// expectResult. Inserted ids are optional in a driver's results, as the
// CRUD spec says, so they match when absent.
func expectation(legacy bson.D) bson.D {
	result, hasResult := legacyField(legacy, "result")
	wantErr, _ := legacyField(legacy, "error")
	expectErr := bson.D{{Key: "isError", Value: true}}
	if doc, ok := result.(bson.D); ok {
		for _, f := range legacyErrorFields {
			if v, ok := legacyField(doc, f); ok {
				expectErr = append(expectErr, bson.E{Key: f, Value: v})
			}
		}
	}
	switch {
	case wantErr == true || len(expectErr) > 1:
		return bson.D{{Key: "expectError", Value: expectErr}}
	case hasResult:
		return bson.D{{Key: "expectResult", Value: optionalInsertedIDs(result)}}
	}
	return nil
}

func optionalInsertedIDs(result any) any {
	doc, ok := result.(bson.D)
	if !ok {
		return result
	}
	out := bson.D{}
	for _, e := range doc {
		if e.Key == "insertedId" || e.Key == "insertedIds" {
			e.Value = bson.D{{Key: "$$unsetOrMatches", Value: e.Value}}
		}
		out = append(out, e)
	}
	return out
}

// flattenOptions moves the fields of a legacy "options" argument up to
// the arguments, where the unified format has them.
func flattenOptions(_ *legacyEntities, op *unifiedOp) error {
	var out bson.D
	for _, a := range op.args {
		if a.Key == "options" {
			out = append(out, a.Value.(bson.D)...)
			continue
		}
		out = append(out, a)
	}
	op.args = out
	return nil
}

// withFilter adds the empty filter the unified runner requires and the
// legacy format leaves out.
func withFilter(e *legacyEntities, op *unifiedOp) error {
	if _, ok := legacyField(op.args, "filter"); !ok {
		op.args = append(op.args, bson.E{Key: "filter", Value: bson.D{}})
	}
	return flattenOptions(e, op)
}

// rewriteArg flattens op's options and replaces its argument key by
// what rewrite makes of it.
func rewriteArg(e *legacyEntities, op *unifiedOp, key string, rewrite func(any) (any, error)) error {
	if err := flattenOptions(e, op); err != nil {
		return err
	}
	for i, a := range op.args {
		if a.Key != key {
			continue
		}
		v, err := rewrite(a.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		op.args[i].Value = v
	}
	return nil
}

// bulkWriteArgs rewrites requests [{name, arguments}] as [{name: arguments}].
func bulkWriteArgs(e *legacyEntities, op *unifiedOp) error {
	return rewriteArg(e, op, "requests", func(v any) (any, error) {
		requests := bson.A{}
		for _, r := range v.(bson.A) {
			req := r.(bson.D)
			requests = append(requests, bson.D{{Key: strField(req, "name"), Value: docField(req, "arguments")}})
		}
		return requests, nil
	})
}

// countArgs sends the count command the legacy count helper sends, since
// the unified runner does not run count.
func countArgs(e *legacyEntities, op *unifiedOp) error {
	if docField(op.legacy, "collectionOptions") != nil {
		return fmt.Errorf("count with collectionOptions is not translated")
	}
	cmd := bson.D{{Key: "count", Value: e.file.collection}}
	args := bson.D{{Key: "commandName", Value: "count"}}
	for _, a := range op.args {
		switch a.Key {
		case "filter":
			cmd = append(cmd, bson.E{Key: "query", Value: a.Value})
		case "session":
			args = append(args, a)
		default:
			return fmt.Errorf("unknown count argument %q", a.Key)
		}
	}
	op.name, op.object = "runCommand", e.database(docField(op.legacy, "databaseOptions"))
	op.args = append(args, bson.E{Key: "command", Value: cmd})
	return nil
}

// runCommandArgs takes the command's name from command_name.
func runCommandArgs(_ *legacyEntities, op *unifiedOp) error {
	name := strField(op.legacy, "command_name")
	if name == "" {
		return fmt.Errorf("no command_name")
	}
	op.args = append(bson.D{{Key: "commandName", Value: name}}, op.args...)
	return nil
}

// withTransactionArgs translates the callback's operations.
func withTransactionArgs(e *legacyEntities, op *unifiedOp) error {
	return rewriteArg(e, op, "callback", func(v any) (any, error) {
		return e.operations(arrField(v.(bson.D), "operations"))
	})
}

// namespaceArgs renames database, collection and index to the unified
// databaseName, collectionName and indexName.
func namespaceArgs(_ *legacyEntities, op *unifiedOp) error {
	names := map[string]string{"database": "databaseName", "collection": "collectionName", "index": "indexName"}
	for i, a := range op.args {
		to, ok := names[a.Key]
		if !ok {
			return fmt.Errorf("unknown argument %q", a.Key)
		}
		op.args[i].Key = to
	}
	return nil
}
