package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The transactions specification tests the Go driver v1.17.10 module ships
// are in the legacy format of the transactions spec's README (runOn, data,
// tests[].operations on objects named collection, database, session0,
// session1 and testRunner, expectations, outcome), which the driver's
// unified runner does not read. translateLegacySpec rewrites each file into
// the unified format with the same meaning, so the one runner executes
// them:
//
//   - each test creates its own client (its clientOptions and
//     useMultipleMongoses), database, collections (one per distinct
//     collectionOptions or databaseOptions) and sessions in a first
//     createEntities operation, since legacy options are per test;
//   - the test's failPoint becomes a failPoint operation right after;
//   - both sessions end after the operations, before events are
//     compared, as the legacy runner ends them (an open transaction's
//     abortTransaction is among the expected events);
//   - expected null fields must be absent, lsid "sessionN" is that
//     session's lsid, 42 stands for any cursor id, cluster time or
//     recovery token;
//   - count, which the unified runner does not run, is sent as the
//     count command it stands for.

// legacySpecDirs maps each legacy directory scripts/specs.sh lays out to
// the unified directory the driver's runner reads, where the translations
// go.
var legacySpecDirs = map[string]string{
	"transactions/tests/legacy":                "transactions/tests/unified",
	"transactions-convenient-api/tests/legacy": "transactions-convenient-api/tests/unified",
}

// legacyFilePrefix starts every translated file's name, so that a
// translated test's name never collides with one the driver's runner
// skips by name (it skips some of its own unified conversions).
const legacyFilePrefix = "legacy-"

// translateLegacyDir translates every JSON file of from into to.
func translateLegacyDir(from, to string) error {
	files, err := filepath.Glob(filepath.Join(from, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no legacy spec files in %s", from)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		out, err := translateLegacySpec(src)
		if err != nil {
			return fmt.Errorf("translate %s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(to, legacyFilePrefix+filepath.Base(file)), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// legacyFile is what every test of a legacy file shares.
type legacyFile struct {
	database   string
	collection string
}

// translateLegacySpec returns the unified-format JSON of one legacy file.
func translateLegacySpec(src []byte) ([]byte, error) {
	var doc bson.D
	if err := bson.UnmarshalExtJSON(src, true, &doc); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if err := onlyKeys(doc, "runOn", "database_name", "collection_name", "data", "tests"); err != nil {
		return nil, err
	}
	file := legacyFile{database: strField(doc, "database_name"), collection: strField(doc, "collection_name")}
	var tests bson.A
	for _, t := range arrField(doc, "tests") {
		test, err := file.test(t.(bson.D))
		if err != nil {
			return nil, fmt.Errorf("test %q: %w", strField(t.(bson.D), "description"), err)
		}
		tests = append(tests, test)
	}
	out := bson.D{
		{Key: "description", Value: file.database + "." + file.collection},
		{Key: "schemaVersion", Value: "1.9"},
		{Key: "runOnRequirements", Value: runOnRequirements(arrField(doc, "runOn"))},
		{Key: "initialData", Value: bson.A{bson.D{
			{Key: "collectionName", Value: file.collection},
			{Key: "databaseName", Value: file.database},
			{Key: "documents", Value: orEmpty(arrField(doc, "data"))},
		}}},
		{Key: "tests", Value: tests},
	}
	return bson.MarshalExtJSONIndent(out, true, false, "", " ")
}

// runOnRequirements renames runOn's topology to topologies.
func runOnRequirements(runOn bson.A) bson.A {
	reqs := bson.A{}
	for _, r := range runOn {
		var req bson.D
		for _, e := range r.(bson.D) {
			if e.Key == "topology" {
				e.Key = "topologies"
			}
			req = append(req, e)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

func (f legacyFile) test(t bson.D) (bson.D, error) {
	if err := onlyKeys(t, "description", "skipReason", "useMultipleMongoses", "clientOptions", "failPoint",
		"sessionOptions", "operations", "expectations", "outcome"); err != nil {
		return nil, err
	}
	ents := newLegacyEntities(f)
	ops, err := ents.operations(arrField(t, "operations"))
	if err != nil {
		return nil, err
	}
	var prologue bson.A
	prologue = append(prologue, ents.create(t))
	if fp, ok := legacyField(t, "failPoint"); ok {
		prologue = append(prologue, testRunnerOp("failPoint", bson.D{{Key: "client", Value: "client0"}, {Key: "failPoint", Value: fp}}))
	}
	ops = append(prologue, ops...)
	for _, s := range legacySessions {
		ops = append(ops, bson.D{{Key: "name", Value: "endSession"}, {Key: "object", Value: s}})
	}
	out := bson.D{{Key: "description", Value: strField(t, "description")}}
	if reason, ok := legacyField(t, "skipReason"); ok {
		out = append(out, bson.E{Key: "skipReason", Value: reason})
	}
	out = append(out, bson.E{Key: "operations", Value: ops})
	if exp, ok := legacyField(t, "expectations"); ok {
		events, err := expectedEvents(exp.(bson.A))
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: "expectEvents", Value: bson.A{bson.D{{Key: "client", Value: "client0"}, {Key: "events", Value: events}}}})
	}
	if outcome, ok := legacyField(t, "outcome"); ok {
		out = append(out, bson.E{Key: "outcome", Value: f.outcome(outcome.(bson.D))})
	}
	return out, nil
}

func (f legacyFile) outcome(o bson.D) bson.A {
	coll := docField(o, "collection")
	name := f.collection
	if n, ok := legacyField(coll, "name"); ok {
		name = n.(string)
	}
	return bson.A{bson.D{
		{Key: "collectionName", Value: name},
		{Key: "databaseName", Value: f.database},
		{Key: "documents", Value: orEmpty(arrField(coll, "data"))},
	}}
}

// expectedEvents turns command_started_event expectations into unified
// commandStartedEvent ones.
func expectedEvents(exp bson.A) (bson.A, error) {
	events := bson.A{}
	for _, e := range exp {
		started, ok := legacyField(e.(bson.D), "command_started_event")
		if !ok {
			return nil, fmt.Errorf("expectation %v is not a command_started_event", e)
		}
		s := started.(bson.D)
		events = append(events, bson.D{{Key: "commandStartedEvent", Value: bson.D{
			{Key: "command", Value: expectedCommand(docField(s, "command"))},
			{Key: "commandName", Value: strField(s, "command_name")},
			{Key: "databaseName", Value: strField(s, "database_name")},
		}}})
	}
	return events, nil
}

// expectedCommand applies the legacy placeholders: null is absent, a
// session name is that session's lsid, 42 is any cursor id, cluster time
// or recovery token.
func expectedCommand(cmd bson.D) bson.D {
	out := bson.D{}
	for _, e := range cmd {
		switch {
		case e.Key == "readConcern" && e.Value == nil && isWriteOutsideTransaction(cmd):
			e.Value = afterClusterTimeOnly()
		case e.Value == nil:
			e.Value = bson.D{{Key: "$$exists", Value: false}}
		case e.Key == "lsid":
			e.Value = bson.D{{Key: "$$sessionLsid", Value: e.Value}}
		case e.Key == "getMore" && isFortyTwo(e.Value), e.Key == "recoveryToken" && isFortyTwo(e.Value):
			e.Value = bson.D{{Key: "$$exists", Value: true}}
		case e.Key == "readConcern":
			e.Value = expectedReadConcern(e.Value.(bson.D))
		}
		out = append(out, e)
	}
	return out
}

// afterClusterTimeOnly is the read concern a write outside a transaction
// may carry: drivers since DRIVERS-3274 send a causally consistent
// session's afterClusterTime on writes too, where the legacy tests, older,
// expect none.
func afterClusterTimeOnly() bson.D {
	return bson.D{{Key: "$$unsetOrMatches", Value: bson.D{
		{Key: "afterClusterTime", Value: bson.D{{Key: "$$exists", Value: true}}},
	}}}
}

func isWriteOutsideTransaction(cmd bson.D) bool {
	if len(cmd) == 0 || !slices.Contains([]string{"insert", "update", "delete", "findAndModify"}, cmd[0].Key) {
		return false
	}
	autocommit, _ := legacyField(cmd, "autocommit")
	return autocommit == nil
}

func expectedReadConcern(rc bson.D) bson.D {
	out := bson.D{}
	for _, e := range rc {
		if e.Value == nil {
			e.Value = bson.D{{Key: "$$exists", Value: false}}
		} else if e.Key == "afterClusterTime" && isFortyTwo(e.Value) {
			e.Value = bson.D{{Key: "$$exists", Value: true}}
		}
		out = append(out, e)
	}
	return out
}

func isFortyTwo(v any) bool {
	switch n := v.(type) {
	case int32:
		return n == 42
	case int64:
		return n == 42
	case float64:
		return n == 42
	}
	return false
}

func testRunnerOp(name string, args bson.D) bson.D {
	return bson.D{{Key: "name", Value: name}, {Key: "object", Value: "testRunner"}, {Key: "arguments", Value: args}}
}

// The bson.D helpers below read a decoded legacy file; a missing key reads
// as its zero value, and onlyKeys refuses keys the translator does not
// know, so a new legacy field fails the translation instead of being lost.

func legacyField(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

func docField(d bson.D, key string) bson.D {
	v, _ := legacyField(d, key)
	doc, _ := v.(bson.D)
	return doc
}

func strField(d bson.D, key string) string {
	v, _ := legacyField(d, key)
	s, _ := v.(string)
	return s
}

func arrField(d bson.D, key string) bson.A {
	v, _ := legacyField(d, key)
	a, _ := v.(bson.A)
	return a
}

func orEmpty(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}

func onlyKeys(d bson.D, keys ...string) error {
	for _, e := range d {
		if !slices.Contains(keys, e.Key) {
			return fmt.Errorf("unknown legacy field %q (known: %s)", e.Key, strings.Join(keys, ", "))
		}
	}
	return nil
}
