package auth

import (
	"context"
	"errors"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// fakeConn is a connection as auth sees it.
type fakeConn struct {
	values map[string]any
	remote string
}

func newConn(remote string) *fakeConn { return &fakeConn{values: map[string]any{}, remote: remote} }

func (c *fakeConn) Value(k string) any { return c.values[k] }
func (c *fakeConn) SetValue(k string, v any) {
	if v == nil {
		delete(c.values, k)
		return
	}
	c.values[k] = v
}
func (c *fakeConn) RemoteAddr() string { return c.remote }

// newManager is a manager whose users live in memory only.
func newManager(t *testing.T, kf *KeyFile) *Manager {
	t.Helper()
	return &Manager{cfg: Config{Enabled: true, KeyFile: kf}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		users: map[string]*User{}, roles: map[string]*Role{}}
}

func addUser(t *testing.T, m *Manager, name, db, pwd string, roles ...RoleName) {
	t.Helper()
	creds, err := NewCredentials(name, pwd, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	n := UserName{User: name, DB: db}
	m.users[n.id()] = &User{Name: n, Roles: roles, Credentials: creds}
}

// roundTrip runs commands on m for one connection, as the server would.
func roundTrip(m *Manager, c Conn) RoundTrip {
	return func(_ context.Context, db string, cmd bson.D) (bson.D, error) {
		reply, err := m.Run(c, db, cmd[0].Key, cmd)
		if err != nil {
			return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: err.Error()}}, nil
		}
		return append(reply, bson.E{Key: "ok", Value: 1.0}), nil
	}
}

func TestSCRAMBothMechanisms(t *testing.T) {
	m := newManager(t, nil)
	addUser(t, m, "ann", "test", "pässword", RoleName{"read", "test"})
	for _, mech := range []string{MechSHA1, MechSHA256} {
		c := newConn("127.0.0.1:5000")
		err := Authenticate(context.Background(), roundTrip(m, c), Credential{User: "ann", DB: "test", Password: "pässword", Mechanism: mech})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if u, ok := sessionOf(c).User(); !ok || u.User != "ann" {
			t.Fatalf("%s: not authenticated: %v", mech, u)
		}
		bad := newConn("127.0.0.1:5001")
		err = Authenticate(context.Background(), roundTrip(m, bad), Credential{User: "ann", DB: "test", Password: "nope", Mechanism: mech})
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "Authentication failed.") {
			t.Fatalf("%s: wrong password gave %v", mech, err)
		}
		if _, ok := sessionOf(bad).User(); ok {
			t.Fatalf("%s: authenticated with a wrong password", mech)
		}
	}
}

// TestEmptyExchange covers clients that do not send skipEmptyExchange:
// the server's signature comes with done false, then an empty step ends it.
func TestEmptyExchange(t *testing.T) {
	m := newManager(t, nil)
	addUser(t, m, "ann", "admin", "pw")
	c := newConn("10.0.0.1:1")
	conv, err := clientConversation(Credential{User: "ann", DB: "admin", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := conv.Step("")
	r1, err := m.Run(c, "admin", "saslStart", bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: MechSHA256},
		{Key: "payload", Value: bson.Binary{Data: []byte(first)}}})
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := bsonutil.Field(r1, "payload")
	second, err := conv.Step(string(p1.(bson.Binary).Data))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.Run(c, "admin", "saslContinue", bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: int32(1)},
		{Key: "payload", Value: bson.Binary{Data: []byte(second)}}})
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := bsonutil.Field(r2, "done"); done != false {
		t.Fatalf("without skipEmptyExchange the second reply must not be done: %v", r2)
	}
	r3, err := m.Run(c, "admin", "saslContinue", bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: int32(1)},
		{Key: "payload", Value: bson.Binary{}}})
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := bsonutil.Field(r3, "done"); done != true {
		t.Fatalf("empty step must end the conversation: %v", r3)
	}
	if _, ok := sessionOf(c).User(); !ok {
		t.Fatal("not authenticated")
	}
}

func TestUnknownMechanism(t *testing.T) {
	m := newManager(t, nil)
	_, err := m.Run(newConn("127.0.0.1:1"), "admin", "saslStart", bson.D{{Key: "saslStart", Value: 1},
		{Key: "mechanism", Value: "PLAIN"}, {Key: "payload", Value: bson.Binary{}}})
	if err == nil || !strings.Contains(err.Error(), "Received authentication for mechanism PLAIN which is unknown or not enabled") {
		t.Fatalf("got %v", err)
	}
}

func TestAuthorizeFollowsRoles(t *testing.T) {
	m := newManager(t, nil)
	addUser(t, m, "r", "test", "pw", RoleName{"read", "test"})
	c := newConn("127.0.0.1:1")
	find := bson.D{{Key: "find", Value: "c"}}
	if err := m.Authorize(c, "test", "find", find); err == nil || !strings.Contains(err.Error(), "Command find requires authentication") {
		t.Fatalf("unauthenticated find: %v", err)
	}
	if err := Authenticate(context.Background(), roundTrip(m, c), Credential{User: "r", DB: "test", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Authorize(c, "test", "find", find); err != nil {
		t.Fatalf("read may find: %v", err)
	}
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}}
	if err := m.Authorize(c, "test", "insert", ins); err == nil || !strings.Contains(err.Error(), "not authorized on test to execute command { insert: \"c\"") {
		t.Fatalf("read may not insert: %v", err)
	}
	if err := m.Authorize(c, "test", "find", bson.D{{Key: "find", Value: "system.users"}}); err == nil {
		t.Fatal("a database role must not reach system collections")
	}
	// A grant takes effect on the open session.
	u := m.users["test.r"]
	u.Roles = append(u.Roles, RoleName{"readWrite", "test"})
	m.gen.Add(1)
	if err := m.Authorize(c, "test", "insert", ins); err != nil {
		t.Fatalf("after the grant: %v", err)
	}
	// So does a revoke, though every check above was just memoised.
	for range 3 {
		if err := m.Authorize(c, "test", "find", find); err != nil {
			t.Fatalf("before the revoke: %v", err)
		}
	}
	u.Roles = nil
	m.gen.Add(1)
	for _, cmd := range []bson.D{find, ins} {
		if err := m.Authorize(c, "test", cmd[0].Key, cmd); err == nil {
			t.Fatalf("%s after the revoke was allowed", cmd[0].Key)
		}
	}
}

func TestRedactHidesPasswords(t *testing.T) {
	body := bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "s3cret"}, {Key: "roles", Value: bson.A{}}}
	red := Redact(body)
	if v, _ := bsonutil.Field(red, "pwd"); v != "xxx" {
		t.Fatalf("redacted = %v", red)
	}
	if v, _ := bsonutil.Field(body, "pwd"); v != "s3cret" {
		t.Fatal("Redact changed its argument")
	}
	err := notAuthorized("admin", body)
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error shows the password: %v", err)
	}
}

func TestResourceMatching(t *testing.T) {
	cases := []struct {
		r    Resource
		t    Target
		want bool
	}{
		{Resource{DB: "a"}, nsTarget("a", "c"), true},
		{Resource{DB: "a"}, nsTarget("b", "c"), false},
		{Resource{DB: "a"}, dbTarget("a"), true},
		{Resource{DB: "a"}, nsTarget("a", "system.profile"), false},
		{Resource{DB: "a", Coll: "system.profile"}, nsTarget("a", "system.profile"), true},
		{Resource{}, nsTarget("x", "y"), true},
		{Resource{}, clusterTarget(), false},
		{Resource{Cluster: true}, clusterTarget(), true},
		{Resource{Cluster: true}, dbTarget("a"), false},
		{Resource{Coll: "c"}, nsTarget("any", "c"), true},
		{Resource{Coll: "c"}, dbTarget("any"), false},
		{Resource{Any: true}, nsTarget("a", "system.users"), true},
	}
	for _, c := range cases {
		if got := c.r.matches(c.t); got != c.want {
			t.Errorf("%+v matches %+v = %v, want %v", c.r, c.t, got, c.want)
		}
	}
}

func TestKeyFileRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "abc123+/=\n  xyz\n", 0o600)
	kf, err := LoadKeyFile(good)
	if err != nil {
		t.Fatalf("valid key refused: %v", err)
	}
	if kf.key != "abc123+/=xyz" {
		t.Fatalf("whitespace not ignored: %q", kf.key)
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"open":  {"abcdefgh", 0o644, "are too open"},
		"short": {"abc", 0o600, "has length 3, must be between 6 and 1024 chars"},
		"long":  {strings.Repeat("a", 1025), 0o400, "has length 1025"},
		"empty": {" \n", 0o600, "has length 0"},
		"chars": {"abc-def!", 0o600, "invalid char in key file"},
	} {
		_, err := LoadKeyFile(write(name, c.content, c.mode))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
	if strings.Contains(kf.String(), kf.key) || strings.Contains(kf.Credential().String(), kf.key) {
		t.Fatal("the key shows in a string form")
	}
}

// TestKeyFileMembersAuthenticate: a member holding the key logs in as
// __system and may run anything; one with another key may not.
func TestKeyFileMembersAuthenticate(t *testing.T) {
	kf, err := ParseKey("test", "sharedKeyForTheSet")
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, kf)
	c := newConn("10.1.1.1:4000")
	if err := Authenticate(context.Background(), roundTrip(m, c), kf.Credential()); err != nil {
		t.Fatalf("member with the key: %v", err)
	}
	if err := m.Authorize(c, "local", "replSetHeartbeat", bson.D{{Key: "replSetHeartbeat", Value: 1}}); err != nil {
		t.Fatalf("__system may run internal commands: %v", err)
	}
	other, _ := ParseKey("test", "anotherKeyEntirely")
	if err := Authenticate(context.Background(), roundTrip(m, newConn("10.1.1.2:4000")), other.Credential()); err == nil {
		t.Fatal("a member with another key authenticated")
	}
}

// loggedIn returns a connection authenticated as a new user with roles.
func loggedIn(t *testing.T, m *Manager, name string, roles ...RoleName) Conn {
	t.Helper()
	addUser(t, m, name, "admin", "pw", roles...)
	c := newConn("10.0.0.9:1")
	if err := Authenticate(context.Background(), roundTrip(m, c), Credential{User: name, DB: "admin", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReplicaSetAndAdminCommands: commands of the replica set and of
// administration have mongod's requirements; the internal ones are for
// the keyFile's __system user only, not even root.
func TestReplicaSetAndAdminCommands(t *testing.T) {
	kf, _ := ParseKey("test", "c2V0LWtleQ==")
	m := newManager(t, kf)
	root := loggedIn(t, m, "root", RoleName{"root", "admin"})
	monitor := loggedIn(t, m, "mon", RoleName{"clusterMonitor", "admin"})
	writer := loggedIn(t, m, "w", RoleName{"readWrite", "app"})
	member := newConn("10.0.0.10:1")
	if err := Authenticate(context.Background(), roundTrip(m, member), kf.Credential()); err != nil {
		t.Fatal(err)
	}
	cmd := func(name string, rest ...bson.E) bson.D { return append(bson.D{{Key: name, Value: 1}}, rest...) }
	bulk := cmd("bulkWrite",
		bson.E{Key: "ops", Value: bson.A{bson.D{{Key: "insert", Value: 0}}, bson.D{{Key: "update", Value: 1}, {Key: "upsert", Value: true}}}},
		bson.E{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "app.a"}}, bson.D{{Key: "ns", Value: "other.b"}}}})
	cases := []struct {
		c    Conn
		body bson.D
		ok   bool
	}{
		{root, cmd("replSetGetStatus"), true},
		{monitor, cmd("replSetGetStatus"), true},
		{writer, cmd("replSetGetStatus"), false},
		{root, cmd("replSetHeartbeat"), false},
		{member, cmd("replSetHeartbeat"), true},
		{monitor, cmd("replSetReconfig"), false},
		{root, cmd("replSetReconfig"), true},
		{writer, bulk, false},
		{root, bulk, true},
		{writer, cmd("bulkWrite", bson.E{Key: "ops", Value: bson.A{bson.D{{Key: "delete", Value: 0}}}},
			bson.E{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "app.a"}}}}), true},
	}
	for _, c := range cases {
		err := m.Authorize(c.c, "admin", c.body[0].Key, c.body)
		if (err == nil) != c.ok {
			u, _ := sessionOf(c.c).User()
			t.Errorf("%s running %v: %v, want allowed=%v", u, c.body[0].Key, err, c.ok)
		}
	}
}

func TestCreateUserArguments(t *testing.T) {
	m := newManager(t, nil)
	c := newConn("127.0.0.1:1")
	for _, tc := range []struct {
		db   string
		body bson.D
		want string
	}{
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}, {Key: "digestPassword", Value: false}},
			"Use of SCRAM-SHA-256 requires undigested passwords"},
		{"local", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}, "Cannot create users in the local database"},
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: ""}, {Key: "roles", Value: bson.A{}}}, "User passwords must not be empty"},
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "roles", Value: bson.A{}}}, "Must provide a 'pwd' field"},
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "p"}}, "BSON field 'createUser.roles' is missing"},
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}, {Key: "mechanisms", Value: bson.A{"PLAIN"}}},
			"Unknown auth mechanism 'PLAIN'"},
		{"test", bson.D{{Key: "createUser", Value: "a"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"nosuch"}}}, "Could not find role: nosuch@test"},
	} {
		_, err := m.Run(c, tc.db, "createUser", tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.body, err, tc.want)
		}
	}
}

// TestChangeStreamPrivileges: a change stream needs changeStream and find
// on what it watches, as on mongod: read on a database covers its
// collection and database streams, not another database's nor the
// cluster's.
func TestChangeStreamPrivileges(t *testing.T) {
	m := newManager(t, nil)
	addUser(t, m, "r", "test", "pw", RoleName{"read", "test"})
	c := newConn("127.0.0.1:1")
	if err := Authenticate(context.Background(), roundTrip(m, c), Credential{User: "r", DB: "test", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	stream := func(coll any, spec bson.D) bson.D {
		return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: spec}}}}, {Key: "cursor", Value: bson.D{}}}
	}
	if err := m.Authorize(c, "test", "aggregate", stream("c", bson.D{})); err != nil {
		t.Fatalf("read may watch its collection: %v", err)
	}
	if err := m.Authorize(c, "test", "aggregate", stream(int32(1), bson.D{})); err != nil {
		t.Fatalf("read may watch its database: %v", err)
	}
	if err := m.Authorize(c, "other", "aggregate", stream(int32(1), bson.D{})); err == nil {
		t.Fatal("read on test watched another database")
	}
	if err := m.Authorize(c, "admin", "aggregate", stream(int32(1), bson.D{{Key: "allChangesForCluster", Value: true}})); err == nil {
		t.Fatal("read on test watched the whole deployment")
	}
}

// TestUserOfFollowsLoginAndLogout: the name cursors and the session cache
// record is the logged-in user's, and none once the connection logs out.
func TestUserOfFollowsLoginAndLogout(t *testing.T) {
	m := newManager(t, nil)
	if got := m.UserOf(newConn("10.0.0.9:1")); got != "" {
		t.Fatalf("before a login UserOf = %q, want none", got)
	}
	c := loggedIn(t, m, "ann", RoleName{"read", "test"})
	if got := m.UserOf(c); got != "ann@admin" {
		t.Fatalf("after the login UserOf = %q, want ann@admin", got)
	}
	if _, err := m.Run(c, "admin", "logout", bson.D{{Key: "logout", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := m.UserOf(c); got != "" {
		t.Fatalf("after logout UserOf = %q, want none", got)
	}
}
