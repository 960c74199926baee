package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// roleCheck is one command of a family, run on a database.
type roleCheck struct {
	family string
	db     string
	cmd    func(user string) bson.D
	// allowed lists the roles mongod lets run it.
	allowed string
}

func roleChecks() []roleCheck {
	fixed := func(d bson.D) func(string) bson.D { return func(string) bson.D { return d } }
	return []roleCheck{
		{"read", "test", fixed(bson.D{{Key: "find", Value: "c"}}),
			"read readWrite dbOwner readAnyDatabase readWriteAnyDatabase root"},
		{"read", "test", fixed(bson.D{{Key: "listCollections", Value: 1}}),
			"read readWrite dbAdmin dbOwner readAnyDatabase readWriteAnyDatabase root"},
		{"write", "test", fixed(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}),
			"readWrite dbOwner readWriteAnyDatabase root"},
		{"write", "test", fixed(bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "none", Value: 1}}}, {Key: "limit", Value: 0}}}}}),
			"readWrite dbOwner readWriteAnyDatabase root"},
		{"index", "test", fixed(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}}),
			"readWrite dbAdmin dbOwner readWriteAnyDatabase root"},
		{"index", "test", fixed(bson.D{{Key: "listIndexes", Value: "c"}}),
			"read readWrite dbAdmin dbOwner readAnyDatabase readWriteAnyDatabase root"},
		{"user", "test", func(u string) bson.D {
			return bson.D{{Key: "createUser", Value: "made-by-" + u}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}
		}, "userAdmin dbOwner userAdminAnyDatabase root"},
		{"user", "test", fixed(bson.D{{Key: "usersInfo", Value: 1}}),
			"userAdmin dbOwner userAdminAnyDatabase root"},
		{"admin", "admin", fixed(bson.D{{Key: "serverStatus", Value: 1}}),
			"clusterMonitor clusterAdmin root"},
		{"admin", "admin", fixed(bson.D{{Key: "currentOp", Value: 1}}),
			"clusterMonitor clusterAdmin root"},
		{"admin", "admin", fixed(bson.D{{Key: "getCmdLineOpts", Value: 1}}),
			"clusterMonitor clusterAdmin root"},
		{"profiler", "test", fixed(bson.D{{Key: "profile", Value: -1}}),
			"dbAdmin dbOwner root"},
		{"profiler", "test", fixed(bson.D{{Key: "find", Value: "system.profile"}}),
			"dbAdmin dbOwner clusterMonitor clusterAdmin root"},
		{"ttl", "admin", fixed(bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}}),
			"clusterMonitor clusterAdmin root"},
		{"ttl", "admin", fixed(bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: true}}),
			"clusterAdmin root"},
		{"ttl", "test", fixed(bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{
			{Key: "keyPattern", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "expireAfterSeconds", Value: 60}}}}),
			"dbAdmin dbOwner root"},
	}
}

var builtinRoles = []struct{ role, db string }{
	{"read", "test"}, {"readWrite", "test"}, {"dbAdmin", "test"}, {"userAdmin", "test"}, {"dbOwner", "test"},
	{"clusterMonitor", "admin"}, {"clusterAdmin", "admin"}, {"readAnyDatabase", "admin"},
	{"readWriteAnyDatabase", "admin"}, {"userAdminAnyDatabase", "admin"}, {"root", "admin"},
}

// TestAuthBuiltinRolesTable runs a command of every family as a user of
// every built-in role: allowed ones succeed, the others get 13
// Unauthorized with mongod's message.
func TestAuthBuiltinRolesTable(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	coll := root.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "t", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ix := bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 3600}}
	runCmd(t, root.Database("test"), bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{ix}}})
	for _, r := range builtinRoles {
		user := "u-" + r.role
		createUser(t, root, "test", user, "pw-"+r.role, bson.A{bson.D{{Key: "role", Value: r.role}, {Key: "db", Value: r.db}}})
	}
	for _, r := range builtinRoles {
		t.Run(r.role, func(t *testing.T) {
			c := mustConnectAs(t, s, "u-"+r.role, "pw-"+r.role, "test", "")
			for _, check := range roleChecks() {
				cmd := check.cmd("u-" + r.role)
				allowed := strings.Contains(" "+check.allowed+" ", " "+r.role+" ")
				err := c.Database(check.db).RunCommand(ctxT(t), cmd).Err()
				switch {
				case allowed && err != nil:
					t.Errorf("%s: %s %v refused: %v", check.family, r.role, cmd[0].Key, err)
				case !allowed:
					var se mongo.ServerError
					if !errorAs(err, &se) || !se.HasErrorCode(13) {
						t.Errorf("%s: %s %v: want 13 Unauthorized, got %v", check.family, r.role, cmd[0].Key, err)
					} else if !se.HasErrorMessage("not authorized on " + check.db + " to execute command { " + cmd[0].Key) {
						t.Errorf("%s: %s: message %v", check.family, r.role, err)
					}
				}
			}
		})
	}
}

// TestAuthCustomRoles: createRole with a privilege on one collection,
// rolesInfo, then dropRole takes the privilege away from its users.
func TestAuthCustomRoles(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	runCmd(t, root.Database("test"), bson.D{{Key: "createRole", Value: "logReader"},
		{Key: "privileges", Value: bson.A{bson.D{
			{Key: "resource", Value: bson.D{{Key: "db", Value: "test"}, {Key: "collection", Value: "logs"}}},
			{Key: "actions", Value: bson.A{"find"}}}}},
		{Key: "roles", Value: bson.A{}}})
	err := root.Database("test").RunCommand(ctxT(t), bson.D{{Key: "createRole", Value: "wide"},
		{Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"serverStatus"}}}}},
		{Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, 49, "cannot be granted privileges that target other databases or the cluster")
	createUser(t, root, "test", "lr", "lr-pw", bson.A{"logReader"})
	c := mustConnectAs(t, s, "lr", "lr-pw", "test", "")
	if err := c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "logs"}}).Err(); err != nil {
		t.Fatalf("custom role find: %v", err)
	}
	err = c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "other"}}).Err()
	wantCode(t, err, 13, "not authorized on test")
	// mongosh's "show collections": only what the role reaches.
	if _, err := root.Database("test").Collection("logs").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Database("test").Collection("secret").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	names, err := c.Database("test").ListCollectionNames(ctxT(t), bson.D{}, options.ListCollections().SetAuthorizedCollections(true).SetNameOnly(true))
	if err != nil || len(names) != 1 || names[0] != "logs" {
		t.Fatalf("authorized collections = %v, %v", names, err)
	}
	err = c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "listCollections", Value: 1}}).Err()
	wantCode(t, err, 13, "not authorized on test")
	info := runCmd(t, c.Database("test"), bson.D{{Key: "rolesInfo", Value: "logReader"}, {Key: "showPrivileges", Value: true}})
	roles := field(t, info, "roles").(bson.A)
	if len(roles) != 1 || field(t, roles[0].(bson.D), "isBuiltin") != false {
		t.Fatalf("rolesInfo = %v", info)
	}
	err = root.Database("test").RunCommand(ctxT(t), bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"nosuch"}}}).Err()
	wantCode(t, err, 31, "Could not find role: nosuch@test")
	runCmd(t, root.Database("test"), bson.D{{Key: "dropRole", Value: "logReader"}})
	err = c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "logs"}}).Err()
	wantCode(t, err, 13, "not authorized on test")
}

// TestAuthUserCommands: updateUser, grant/revoke, dropUser and
// dropAllUsersFromDatabase with mongod's replies and errors.
func TestAuthUserCommands(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	db := root.Database("test")
	createUser(t, root, "test", "dan", "old-pw", bson.A{"read"})
	err := db.RunCommand(ctxT(t), bson.D{{Key: "createUser", Value: "dan"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, 51003, `User "dan@test" already exists`)
	runCmd(t, db, bson.D{{Key: "updateUser", Value: "dan"}, {Key: "pwd", Value: "new-pw"}})
	if _, err := connectAs(t, s, "dan", "old-pw", "test", ""); err == nil {
		t.Fatal("old password still works")
	}
	dan := mustConnectAs(t, s, "dan", "new-pw", "test", "")
	runCmd(t, db, bson.D{{Key: "grantRolesToUser", Value: "dan"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	if _, err := dan.Database("test").Collection("c").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatalf("granted readWrite on the open connection: %v", err)
	}
	runCmd(t, db, bson.D{{Key: "revokeRolesFromUser", Value: "dan"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	_, err = dan.Database("test").Collection("c").InsertOne(ctxT(t), bson.D{})
	wantCode(t, err, 13, "not authorized on test")
	err = db.RunCommand(ctxT(t), bson.D{{Key: "dropUser", Value: "nobody"}}).Err()
	wantCode(t, err, 11, "User 'nobody@test' not found")
	createUser(t, root, "test", "eve", "pw", bson.A{})
	out := runCmd(t, db, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	if field(t, out, "n") != int32(2) {
		t.Fatalf("dropAllUsersFromDatabase = %v", out)
	}
	err = dan.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	wantCode(t, err, 13, "not authorized on test")
}

func privilege(db, coll string, actions ...string) bson.D {
	a := bson.A{}
	for _, x := range actions {
		a = append(a, x)
	}
	return bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: db}, {Key: "collection", Value: coll}}}, {Key: "actions", Value: a}}
}

// TestAuthRoleEditing: grant and revoke privileges and roles on a custom
// role, with the change seen by a logged-in user at once; cycles and
// built-in roles are refused.
func TestAuthRoleEditing(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	db := root.Database("test")
	runCmd(t, db, bson.D{{Key: "createRole", Value: "r1"}, {Key: "privileges", Value: bson.A{privilege("test", "a", "find")}}, {Key: "roles", Value: bson.A{}}})
	createUser(t, root, "test", "ed", "ed-pw", bson.A{"r1"})
	ed := mustConnectAs(t, s, "ed", "ed-pw", "test", "")
	canFind := func(coll string) error {
		return ed.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: coll}}).Err()
	}
	if err := canFind("a"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, canFind("b"), 13, "not authorized on test")
	runCmd(t, db, bson.D{{Key: "grantPrivilegesToRole", Value: "r1"}, {Key: "privileges", Value: bson.A{privilege("test", "b", "find")}}})
	if err := canFind("b"); err != nil {
		t.Fatalf("after grantPrivilegesToRole: %v", err)
	}
	runCmd(t, db, bson.D{{Key: "revokePrivilegesFromRole", Value: "r1"}, {Key: "privileges", Value: bson.A{privilege("test", "b", "find")}}})
	wantCode(t, canFind("b"), 13, "not authorized on test")
	runCmd(t, db, bson.D{{Key: "grantRolesToRole", Value: "r1"}, {Key: "roles", Value: bson.A{"read"}}})
	if err := canFind("c"); err != nil {
		t.Fatalf("after grantRolesToRole read: %v", err)
	}
	runCmd(t, db, bson.D{{Key: "revokeRolesFromRole", Value: "r1"}, {Key: "roles", Value: bson.A{"read"}}})
	wantCode(t, canFind("c"), 13, "not authorized on test")
	runCmd(t, db, bson.D{{Key: "createRole", Value: "r2"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"r1"}}})
	err := db.RunCommand(ctxT(t), bson.D{{Key: "grantRolesToRole", Value: "r1"}, {Key: "roles", Value: bson.A{"r2"}}}).Err()
	wantCode(t, err, 49, "would introduce a cycle in the role graph")
	err = db.RunCommand(ctxT(t), bson.D{{Key: "updateRole", Value: "read"}, {Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, 49, "Cannot update built-in role")
	runCmd(t, db, bson.D{{Key: "updateRole", Value: "r1"}, {Key: "privileges", Value: bson.A{}}})
	wantCode(t, canFind("a"), 13, "not authorized on test")
	out := runCmd(t, db, bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	if field(t, out, "n") != int32(2) {
		t.Fatalf("dropAllRolesFromDatabase = %v", out)
	}
}
