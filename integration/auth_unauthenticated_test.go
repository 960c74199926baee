package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

// mongodAliases are the historical spellings mongod answers under the
// command's own name (it names that one in refusals and lists only it).
var mongodAliases = map[string]string{
	"ismaster": "isMaster", "buildinfo": "buildInfo", "findandmodify": "findAndModify",
	"dbhash": "dbHash", "deleteIndexes": "dropIndexes",
}

// TestUnauthenticatedEveryCommand: once a user exists, every command the
// server answers, but for the few mongod runs without a login, refuses an
// unauthenticated client with 13 "Command <name> requires authentication",
// naming the command as mongod does; listCommands says which need a login.
// The commands are the server's own list, so a new command gets a row.
func TestUnauthenticatedEveryCommand(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	anon := connect(t, &testServer{uri: plainHostURI(s)})
	listed := field(t, runCmd(t, root.Database("admin"), bson.D{{Key: "listCommands", Value: 1}}), "commands").(bson.D)
	names := map[string]bool{}
	for _, e := range listed {
		names[e.Key] = true
		if own, alias := mongodAliases[e.Key]; alias {
			t.Errorf("listCommands lists the alias %s of %s", e.Key, own)
		}
	}
	for alias := range mongodAliases {
		names[alias] = true
	}
	open := 0
	for name := range names {
		own := name
		if o, ok := mongodAliases[name]; ok {
			own = o
		}
		requiresAuth, _ := field(t, field(t, listed, own).(bson.D), "requiresAuth").(bool)
		err := anon.Database("admin").RunCommand(ctxT(t), bson.D{{Key: name, Value: 1}}).Err()
		refused := isRequiresAuthentication(err, own)
		switch {
		case requiresAuth && !refused:
			t.Errorf("%s: %v, want 13 \"Command %s requires authentication\"", name, err, own)
		case !requiresAuth && refused:
			t.Errorf("%s runs without a login on mongod, but was refused", name)
		case !requiresAuth:
			open++
		}
	}
	t.Logf("%d command names: %d answer without a login", len(names), open)
	if open == 0 || open > 20 {
		t.Errorf("%d commands answer without a login", open)
	}
}

func isRequiresAuthentication(err error, name string) bool {
	var ce mongo.CommandError
	if e, ok := err.(mongo.CommandError); ok {
		ce = e
	} else {
		return false
	}
	return ce.Code == 13 && ce.Message == "Command "+name+" requires authentication"
}
