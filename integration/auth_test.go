package integration

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
)

func TestAuthLocalhostException(t *testing.T) {
	s := startServer(t, app.Config{Security: app.Security{Auth: true}})
	anon := connect(t, s)
	// While no user exists a loopback client holds no privilege, but is not
	// told to log in either; it may create the first user, in admin only.
	err := anon.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	wantCode(t, err, 13, "not authorized on test to execute command { find: \"c\"")
	err = anon.Database("test").RunCommand(ctxT(t), bson.D{
		{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, 13, "not authorized on test to execute command { createUser: \"u\", pwd: \"xxx\"")
	if names, err := anon.ListDatabaseNames(ctxT(t), bson.D{}); err != nil || len(names) != 0 {
		t.Fatalf("listDatabases under the exception = %v, %v", names, err)
	}
	runCmd(t, anon.Database("admin"), bson.D{
		{Key: "createUser", Value: rootUser}, {Key: "pwd", Value: rootPwd}, {Key: "roles", Value: bson.A{"root"}}})
	err = anon.Database("admin").RunCommand(ctxT(t), bson.D{
		{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"root"}}}).Err()
	wantCode(t, err, 13, "Command createUser requires authentication")
	err = anon.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	wantCode(t, err, 13, "Command find requires authentication")
	// What answers without a login, as on mongod.
	for _, cmd := range []string{"hello", "isMaster", "ping", "buildInfo", "connectionStatus"} {
		runCmd(t, anon.Database("admin"), bson.D{{Key: cmd, Value: 1}})
	}
	s.uri = userURI(s, rootUser, rootPwd, "admin", "")
}

func TestAuthSCRAMGoDriver(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	createUser(t, root, "test", "alice", "alice-pw", bson.A{"readWrite"})
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-1", ""} {
		t.Run("mech="+mech, func(t *testing.T) {
			c := mustConnectAs(t, s, "alice", "alice-pw", "test", mech)
			coll := c.Database("test").Collection("c")
			if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "m", Value: mech}}); err != nil {
				t.Fatal(err)
			}
			if n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "m", Value: mech}}); err != nil || n != 1 {
				t.Fatalf("count = %d, %v", n, err)
			}
			var status bson.D
			if err := c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "connectionStatus", Value: 1}}).Decode(&status); err != nil {
				t.Fatal(err)
			}
			info := field(t, status, "authInfo").(bson.D)
			users := field(t, info, "authenticatedUsers").(bson.A)
			if len(users) != 1 || field(t, users[0].(bson.D), "user") != "alice" {
				t.Fatalf("authInfo = %v", info)
			}
			_, err := connectAs(t, s, "alice", "wrong-pw", "test", mech)
			wantCode(t, err, 18, "Authentication failed.")
			_, err = connectAs(t, s, "nobody", "x", "test", mech)
			wantCode(t, err, 18, "Authentication failed.")
			_, err = connectAs(t, s, "alice", "alice-pw", "admin", mech)
			wantCode(t, err, 18, "Authentication failed.")
		})
	}
}

// TestAuthUsersStoredAsMongod reads admin.system.users as root: salted
// keys with mongod's iteration counts, never the password; and the user
// survives a restart.
func TestAuthUsersStoredAsMongod(t *testing.T) {
	dir := t.TempDir()
	s, _ := startAuthServer(t, app.Config{DataDir: dir})
	root := connect(t, s)
	createUser(t, root, "test", "bob", "bob-Secret-1", bson.A{"read", bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "other"}}})
	var doc bson.D
	if err := root.Database("admin").Collection("system.users").FindOne(ctxT(t), bson.D{{Key: "_id", Value: "test.bob"}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	creds := field(t, doc, "credentials").(bson.D)
	for mech, iters := range map[string]int32{"SCRAM-SHA-1": 10000, "SCRAM-SHA-256": 15000} {
		sec := field(t, creds, mech).(bson.D)
		if field(t, sec, "iterationCount") != iters {
			t.Fatalf("%s iterationCount = %v", mech, sec)
		}
		for _, k := range []string{"salt", "storedKey", "serverKey"} {
			if v, _ := field(t, sec, k).(string); v == "" {
				t.Fatalf("%s.%s missing: %v", mech, k, sec)
			}
		}
	}
	raw, _ := bson.Marshal(doc)
	if strings.Contains(string(raw), "bob-Secret-1") {
		t.Fatal("the password is stored in clear")
	}
	info := runCmd(t, root.Database("test"), bson.D{{Key: "usersInfo", Value: "bob"}})
	u := field(t, info, "users").(bson.A)[0].(bson.D)
	if got := field(t, u, "mechanisms").(bson.A); len(got) != 2 {
		t.Fatalf("mechanisms = %v", got)
	}
	stopAndRestart(t, s, dir)
	c := mustConnectAs(t, s, "bob", "bob-Secret-1", "test", "SCRAM-SHA-256")
	if _, err := c.Database("other").Collection("x").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatalf("role on another database after restart: %v", err)
	}
}

func stopAndRestart(t *testing.T, s *testServer, dir string) {
	t.Helper()
	addr := s.app.Addr().String()
	s.stop(t)
	cfg := app.Config{Addr: addr, DataDir: dir, Security: app.Security{Auth: true}}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Start(cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	s.app = a
}

func TestAuthCursorsBelongToTheirUser(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	createUser(t, root, "test", "ann", "ann-pw", bson.A{"read"})
	createUser(t, root, "test", "ben", "ben-pw", bson.A{"read"})
	docs := make([]any, 10)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := root.Database("test").Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	ann := mustConnectAs(t, s, "ann", "ann-pw", "test", "")
	ben := mustConnectAs(t, s, "ben", "ben-pw", "test", "")
	reply := runCmd(t, ann.Database("test"), bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}})
	id := field(t, field(t, reply, "cursor").(bson.D), "id").(int64)
	err := ben.Database("test").RunCommand(ctxT(t), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}).Err()
	wantCode(t, err, 13, "was not created by the authenticated user")
	err = ben.Database("test").RunCommand(ctxT(t), bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Err()
	wantCode(t, err, 13, "was not created by the authenticated user")
	// The owner still can; root may kill any cursor.
	runCmd(t, ann.Database("test"), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 2}})
	// Once the owner loses what opening the cursor took, getMore is refused.
	runCmd(t, root.Database("test"), bson.D{{Key: "revokeRolesFromUser", Value: "ann"}, {Key: "roles", Value: bson.A{"read"}}})
	err = ann.Database("test").RunCommand(ctxT(t), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}).Err()
	wantCode(t, err, 13, fmt.Sprintf("not authorized for getMore with cursor id %d", id))
	killed := runCmd(t, root.Database("test"), bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	if got := field(t, killed, "cursorsKilled").(bson.A); len(got) != 1 {
		t.Fatalf("root killCursors = %v", killed)
	}
}

func TestAuthOtherDatabaseNeedsARole(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	createUser(t, root, "test", "carl", "carl-pw", bson.A{"readWrite"})
	if _, err := root.Database("other").Collection("c").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	c := mustConnectAs(t, s, "carl", "carl-pw", "test", "")
	err := c.Database("other").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	wantCode(t, err, 13, "not authorized on other to execute command { find: \"c\"")
	err = c.Database("other").RunCommand(ctxT(t), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}).Err()
	wantCode(t, err, 13, "not authorized on other")
	err = c.Database("other").RunCommand(ctxT(t), bson.D{{Key: "listCollections", Value: 1}}).Err()
	wantCode(t, err, 13, "not authorized on other")
	names, err := c.ListDatabaseNames(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "other" {
			t.Fatalf("listDatabases shows a database the user has no role on: %v", names)
		}
	}
}
