package router

import (
	"maps"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// listCommands lists exactly the commands the router answers, from both
// of its tables, and says which of them run only against admin.
func TestListCommandsListsEveryCommand(t *testing.T) {
	fc := startFakeCluster(t)
	reply := fc.run("admin", bson.D{{Key: "listCommands", Value: 1}})
	listed := map[string]bson.D{}
	for _, e := range bsonutil.ToD(mustField(reply, "commands")) {
		listed[e.Key] = bsonutil.ToD(e.Value)
	}
	want := maps.Clone(commandTable())
	maps.Copy(want, authCommandTable())
	if got, all := slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, all) {
		t.Fatalf("listCommands lists %d commands, the tables hold %d:\n%v\n%v", len(got), len(all), got, all)
	}
	for name, info := range listed {
		if got := mustField(info, "adminOnly") == true; got != isAdminOnly(name) {
			t.Errorf("%s: adminOnly %v, want %v", name, got, isAdminOnly(name))
		}
	}
}

// Every admin-only command is refused against another database before
// anything runs, as mongos refuses it: dispatch checks, not each handler.
func TestAdminOnlyCommandsRefuseOtherDatabases(t *testing.T) {
	fc := startFakeCluster(t)
	n := 0
	for _, name := range slices.Sorted(maps.Keys(commandTable())) {
		if !isAdminOnly(name) {
			continue
		}
		n++
		if code := wireclient.ReplyCode(fc.run("db", bson.D{{Key: name, Value: "db.sharded"}})); code != 13 {
			t.Errorf("%s on db: code %d, want 13 (Unauthorized)", name, code)
		}
	}
	if n < 19 {
		t.Fatalf("%d admin-only commands in the table, want at least the 19 isAdminOnly names", n)
	}
}
