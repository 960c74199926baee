package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestLegacySpecTranslation translates every legacy file scripts/specs.sh
// lays out: each must translate, keep its tests, and together they must
// use every operation the translator knows (a row nobody uses is dead, and
// an operation without a row fails the translation).
func TestLegacySpecTranslation(t *testing.T) {
	specs := specsDir(t)
	used := map[string]bool{}
	for legacy := range legacySpecDirs {
		files, err := filepath.Glob(filepath.Join(specs, "source", legacy, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no legacy files in %s (%v): run `make specs`", legacy, err)
		}
		for _, file := range files {
			checkLegacyTranslation(t, file, used)
		}
	}
	for name := range legacyOperations() {
		if !used[name] {
			t.Errorf("no legacy file uses %q: remove its row", name)
		}
	}
}

func checkLegacyTranslation(t *testing.T, file string, used map[string]bool) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var legacy bson.D
	if err := bson.UnmarshalExtJSON(src, true, &legacy); err != nil {
		t.Fatal(err)
	}
	for _, test := range arrField(legacy, "tests") {
		markOperations(arrField(test.(bson.D), "operations"), used)
	}
	out, err := translateLegacySpec(src)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(file), err)
	}
	var unified bson.D
	if err := bson.UnmarshalExtJSON(out, true, &unified); err != nil {
		t.Fatalf("%s: the translation is not extended JSON: %v", filepath.Base(file), err)
	}
	if got, want := len(arrField(unified, "tests")), len(arrField(legacy, "tests")); got != want {
		t.Errorf("%s: %d tests translated, want %d", filepath.Base(file), got, want)
	}
}

func markOperations(ops bson.A, used map[string]bool) {
	for _, op := range ops {
		used[strField(op.(bson.D), "name")] = true
		if cb := docField(docField(op.(bson.D), "arguments"), "callback"); cb != nil {
			markOperations(arrField(cb, "operations"), used)
		}
	}
}

// TestLegacySpecPlaceholders checks each rule of the translation on one
// hand-written legacy test.
func TestLegacySpecPlaceholders(t *testing.T) {
	src := `{"runOn": [{"minServerVersion": "4.0", "topology": ["replicaset"]}],
	"database_name": "db", "collection_name": "c", "data": [],
	"tests": [{"description": "d", "failPoint": {"configureFailPoint": "failCommand", "mode": "alwaysOn"},
	  "operations": [
	    {"name": "startTransaction", "object": "session0", "arguments": {"options": {"readConcern": {"level": "snapshot"}}}},
	    {"name": "insertOne", "object": "collection", "collectionOptions": {"writeConcern": {"w": 1}},
	     "arguments": {"session": "session0", "document": {"_id": 1}}, "result": {"insertedId": 1}},
	    {"name": "count", "object": "collection", "arguments": {"session": "session0", "filter": {"_id": 1}},
	     "result": {"errorCodeName": "OperationNotSupportedInTransaction"}}],
	  "expectations": [{"command_started_event": {"command_name": "getMore", "database_name": "db",
	    "command": {"getMore": 42, "lsid": "session0", "writeConcern": null, "readConcern": {"afterClusterTime": 42}, "recoveryToken": 42}}}],
	  "outcome": {"collection": {"data": [{"_id": 1}]}}}]}`
	out, err := translateLegacySpec([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		`"topologies"`,
		`"configureFailPoint": "failCommand"`, `"name": "failPoint"`, `"name": "createEntities"`,
		`"collectionOptions": {`, `"collectionName": "c"`,
		`"readConcern": {`, // flattened out of options
		`"$$unsetOrMatches": {`,
		`"name": "runCommand"`, `"commandName": "count"`, `"query": {`,
		`"errorCodeName": "OperationNotSupportedInTransaction"`,
		`"$$sessionLsid": "session0"`, `"$$exists": false`,
		`"name": "endSession"`,
	} {
		if !strings.Contains(compactJSON(got), compactJSON(want)) {
			t.Errorf("translation lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(compactJSON(got), compactJSON(`"$$exists": true`)); n != 3 {
		t.Errorf("42 placeholders: %d $$exists:true, want 3 (getMore, afterClusterTime, recoveryToken):\n%s", n, got)
	}
	if strings.Contains(got, `"options"`) {
		t.Errorf("an options argument was not flattened:\n%s", got)
	}
}

func compactJSON(s string) string {
	return strings.Join(strings.Fields(s), "")
}
