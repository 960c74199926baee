package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCommandTableRows: every row has a handler and its own name, every
// alias stands for a row, every command internal/auth answers has a
// row, and no two sources of rows (this package's, replcmds',
// shardcmds') name the same command, so a command cannot be
// half-registered.
func TestCommandTableRows(t *testing.T) {
	table := buildTable(true)
	for name, row := range table {
		if row.run == nil {
			t.Errorf("%s has no handler", name)
		}
		if own, alias := aliasOf[name]; alias && row.name != own || !alias && row.name != name {
			t.Errorf("%s's row is named %q", name, row.name)
		}
	}
	for alias, name := range aliasOf {
		if _, ok := commandRows()[name]; !ok {
			t.Errorf("alias %s stands for %s, which has no row", alias, name)
		}
	}
	for _, name := range auth.CommandNames() {
		if _, ok := table[name]; !ok {
			t.Errorf("internal/auth answers %s, which has no row", name)
		}
	}
	seen := map[string]bool{}
	for _, rows := range []map[string]command{commandRows(), replCommandRows(), shardCommandRows(), testCommandRows()} {
		for name := range rows {
			if seen[name] {
				t.Errorf("%s has two rows, one hiding the other", name)
			}
			seen[name] = true
		}
	}
	if _, ok := buildTable(false)["configureFailPoint"]; ok {
		t.Error("configureFailPoint is in the table without enableTestCommands")
	}
}

// TestArgTypesCoverEveryCommand: every command of the table has its
// IDL types in internal/cmdargs or is read by hand, with a reason, and
// cmdargs names no command the table lacks, so a new command cannot skip
// the question.
func TestArgTypesCoverEveryCommand(t *testing.T) {
	rows := buildTable(true)
	for name, row := range rows {
		if row.name != name {
			continue // an alias
		}
		if typed, why := cmdargs.Covered(name); typed == (why != "") {
			t.Errorf("%s: typed %v, read by hand for %q; want exactly one", name, typed, why)
		}
	}
	for _, name := range cmdargs.Commands() {
		if _, ok := rows[name]; !ok {
			t.Errorf("internal/cmdargs names %s, which is no command", name)
		}
	}
}

// TestAPIParametersEveryCommand runs every command of the table under
// apiStrict: one in API version 1 passes the check (whatever it answers
// next), any other answers APIStrictError naming it, as mongod's.
func TestAPIParametersEveryCommand(t *testing.T) {
	h, c := newTestHandler(t)
	for name, row := range h.table {
		body := bson.D{{Key: name, Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}
		code := replyCode(runOn(h, c, "admin", body))
		if row.apiV1 && code == int32(mongoerr.APIStrictError) {
			t.Errorf("%s is in API version 1 but answered APIStrictError", name)
		}
		if !row.apiV1 && code != int32(mongoerr.APIStrictError) {
			t.Errorf("%s is not in API version 1 but answered code %d under apiStrict", name, code)
		}
	}
}

// TestAPIParameters: the Stable API fields' own checks, in mongod's
// order and words.
func TestAPIParameters(t *testing.T) {
	h, c := newTestHandler(t)
	cases := []struct {
		name string
		body bson.D
		code mongoerr.Code
		msg  string
	}{
		{"strict without version", bson.D{{Key: "ping", Value: 1}, {Key: "apiStrict", Value: true}}, mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"},
		{"deprecation without version", bson.D{{Key: "ping", Value: 1}, {Key: "apiDeprecationErrors", Value: false}}, mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion"},
		{"version 2", bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "2"}}, mongoerr.APIVersionError, `API version must be "1"`},
		{"version a number", bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: int32(1)}}, mongoerr.TypeMismatch, "BSON field 'APIParametersFromClient.apiVersion' is the wrong type 'int', expected type 'string'"},
		{"strict a number", bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: int32(1)}}, mongoerr.TypeMismatch, "BSON field 'APIParametersFromClient.apiStrict' is the wrong type 'int', expected type 'bool'"},
		{"strict, not in version 1", bson.D{{Key: "buildInfo", Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}, mongoerr.APIStrictError, "Provided apiStrict:true, but the command buildInfo is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api"},
		{"strict, alias named by its command", bson.D{{Key: "ismaster", Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}, mongoerr.APIStrictError, "Provided apiStrict:true, but the command isMaster is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api"},
		{"strict, a stage not in version 1", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}, mongoerr.APIStrictError, "$listLocalSessions is not allowed with 'apiStrict: true' in API Version 1"},
		{"strict write to system.js", bson.D{{Key: "insert", Value: "system.js"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}}, mongoerr.APIStrictError, "Provided apiStrict:true, but the command insert attempts to write to system.js"},
	}
	for _, tc := range cases {
		reply := runOn(h, c, "test", tc.body)
		if code := replyCode(reply); code != int32(tc.code) {
			t.Errorf("%s: code %d, want %d (%v)", tc.name, code, tc.code, reply)
			continue
		}
		if msg := errmsgOf(reply); msg != tc.msg {
			t.Errorf("%s: errmsg %q, want %q", tc.name, msg, tc.msg)
		}
	}
	ok := runOn(h, c, "test", bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "1"}, {Key: "apiStrict", Value: true}, {Key: "apiDeprecationErrors", Value: true}})
	if code := replyCode(ok); code != 0 {
		t.Errorf("ping under version 1, strict: code %d", code)
	}
}
