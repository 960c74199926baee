package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestShardedClusterAuth: a config set, two shards and a router started
// with one keyFile. Clients log in to the router as users it stores on
// the config set (created through the localhost exception first), with
// SCRAM-SHA-256 and SCRAM-SHA-1; a wrong password, a read-only user's
// insert and a dropped user are refused with mongod's codes; a second
// router knows the users at once.
func TestShardedClusterAuth(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("c2hhcmRlZCBjbHVzdGVyIGtleQ=="), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, "--configsvr", "--keyFile", key)
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, 1, "--shardsvr", "--keyFile", key)
	}
	configDB := "cfg/" + c.config.addrs[0]
	c.router = freePort(t)
	startRouterProcess(t, configDB, c.router, "--keyFile", key)

	anonymous := c.client()
	if err := anonymous.Database("app").Collection("c").FindOne(ctxT(t), bson.D{}).Err(); codeOfErr(err) != 13 {
		t.Fatalf("find before any login: %v, want 13 Unauthorized", err)
	}
	runCmd(t, anonymous.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "admin-pass"},
		{Key: "roles", Value: bson.A{"root"}}})
	admin := c.client(options.Client().SetAuth(options.Credential{Username: "admin", Password: "admin-pass"}))
	addShardsAndShard(t, c, admin, "app", "c")
	runCmd(t, admin.Database("app"), bson.D{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "reader-pass"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}})
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	if _, err := admin.Database("app").Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	t.Run("Passwords", func(t *testing.T) { testRouterPasswords(t, c) })
	t.Run("ReadOnlyUser", func(t *testing.T) { testRouterReadOnlyUser(t, c) })
	t.Run("CursorOwners", func(t *testing.T) { testRouterCursorOwners(t, c, admin) })
	t.Run("CursorSessions", func(t *testing.T) { testRouterCursorSessions(t, c, admin) })
	t.Run("UsersOnTheConfigSet", func(t *testing.T) { testRouterUsersShared(t, c, admin, configDB, key) })
}

// testRouterCursorOwners: a router cursor is its user's, as on mongod:
// another user's getMore and killCursors are refused with 13 for every
// kind of router cursor (merged from every shard, one shard's passed
// through, a change stream), and the owner goes on.
func testRouterCursorOwners(t *testing.T, c *routedCluster, admin *mongo.Client) {
	reader := c.client(options.Client().SetAuth(options.Credential{Username: "reader", Password: "reader-pass", AuthSource: "app"}))
	for _, o := range routerCursorOpens {
		reply := runCmd(t, admin.Database("app"), o.cmd)
		id, _ := lookupField(lookupField(reply, "cursor").(bson.D), "id").(int64)
		if id == 0 {
			t.Fatalf("%s: no cursor left open: %v", o.name, reply)
		}
		// maxTimeMS bounds a change stream's wait for events (awaitData).
		getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1},
			{Key: "maxTimeMS", Value: 200}}
		err := reader.Database("app").RunCommand(ctxT(t), getMore).Err()
		if codeOfErr(err) != 13 || !strings.Contains(err.Error(), "was not created by the authenticated user") {
			t.Fatalf("%s: another user's getMore: %v, want 13", o.name, err)
		}
		err = reader.Database("app").RunCommand(ctxT(t), bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Err()
		if codeOfErr(err) != 13 {
			t.Fatalf("%s: another user's killCursors: %v, want 13", o.name, err)
		}
		if err := admin.Database("app").RunCommand(ctxT(t), getMore).Err(); err != nil {
			t.Fatalf("%s: the owner's getMore after the refusals: %v", o.name, err)
		}
		runCmd(t, admin.Database("app"), bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	}
}

// codeOfErr is a driver error's server code, 0 for none.
func codeOfErr(err error) int32 {
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range []int32{13, 18, 11} {
			if se.HasErrorCode(int(code)) {
				return code
			}
		}
		return -1
	}
	return 0
}

// loginErr connects to the router as user@db with password and mechanism
// and pings: the login's error.
func loginErr(t *testing.T, router, db, user, password, mechanism string) error {
	t.Helper()
	cred := options.Credential{Username: user, Password: password, AuthSource: db, AuthMechanism: mechanism}
	cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + router + "/").SetAuth(cred).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Disconnect(context.Background()) }()
	return cl.Ping(ctxT(t), nil)
}

// testRouterPasswords: both SCRAM mechanisms log in with the right
// password; a wrong one is AuthenticationFailed.
func testRouterPasswords(t *testing.T, c *routedCluster) {
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-1"} {
		if err := loginErr(t, c.router, "admin", "admin", "admin-pass", mech); err != nil {
			t.Errorf("%s login: %v", mech, err)
		}
		if err := loginErr(t, c.router, "admin", "admin", "wrong-pass", mech); codeOfErr(err) != 18 {
			t.Errorf("%s login with a wrong password: %v, want 18 AuthenticationFailed", mech, err)
		}
	}
	if err := loginErr(t, c.router, "app", "nobody", "reader-pass", "SCRAM-SHA-256"); codeOfErr(err) != 18 {
		t.Errorf("login of an unknown user: %v, want 18 AuthenticationFailed", err)
	}
}

// testRouterReadOnlyUser: a user with read on app reads through the
// router and is refused an insert with Unauthorized.
func testRouterReadOnlyUser(t *testing.T, c *routedCluster) {
	reader := c.client(options.Client().SetAuth(options.Credential{Username: "reader", Password: "reader-pass", AuthSource: "app"}))
	coll := reader.Database("app").Collection("c")
	n, err := coll.CountDocuments(ctxT(t), bson.D{})
	if err != nil || n != 20 {
		t.Fatalf("reader's count: %d, %v; want 20", n, err)
	}
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 100}}); codeOfErr(err) != 13 {
		t.Fatalf("reader's insert: %v, want 13 Unauthorized", err)
	}
	if err := reader.Database("other").Collection("c").FindOne(ctxT(t), bson.D{}).Err(); codeOfErr(err) != 13 {
		t.Fatalf("reader's find on another database: %v, want 13 Unauthorized", err)
	}
}

// testRouterUsersShared: users live on the config set: a second router
// logs the reader in, usersInfo through it lists the user, and a user
// dropped through the first router can no longer log in through either.
func testRouterUsersShared(t *testing.T, c *routedCluster, admin *mongo.Client, configDB, key string) {
	second := freePort(t)
	startRouterProcess(t, configDB, second, "--keyFile", key)
	if err := loginErr(t, second, "app", "reader", "reader-pass", ""); err != nil {
		t.Fatalf("reader through a second router: %v", err)
	}
	var info struct {
		Users []struct {
			User  string `bson:"user"`
			Roles []struct {
				Role string `bson:"role"`
				DB   string `bson:"db"`
			} `bson:"roles"`
		} `bson:"users"`
	}
	if err := admin.Database("app").RunCommand(ctxT(t), bson.D{{Key: "usersInfo", Value: "reader"}}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if len(info.Users) != 1 || info.Users[0].User != "reader" || len(info.Users[0].Roles) != 1 || info.Users[0].Roles[0].Role != "read" {
		t.Fatalf("usersInfo reader: %+v", info)
	}
	runCmd(t, admin.Database("app"), bson.D{{Key: "dropUser", Value: "reader"}})
	for _, router := range []string{c.router, second} {
		if err := loginErr(t, router, "app", "reader", "reader-pass", ""); codeOfErr(err) != 18 {
			t.Errorf("dropped user's login through %s: %v, want 18", router, err)
		}
	}
}
