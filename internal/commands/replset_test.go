package commands

import (
	"io"
	"log/slog"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// newUninitiatedHandler returns a Handler of a member started with
// --replSet rs0 and not initiated (state STARTUP), as mongosh finds the
// first member before rs.initiate.
func newUninitiatedHandler(tb testing.TB) (*Handler, *server.Conn) {
	tb.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: logger})
	if err != nil {
		tb.Fatalf("open storage: %v", err)
	}
	store, err := docstore.Open(eng, docstore.Options{Logger: logger, Clock: clock.Real{}})
	if err != nil {
		tb.Fatalf("open docstore: %v", err)
	}
	rs, err := repl.Open(repl.Config{SetName: "rs0", Self: "127.0.0.1:50001", Base: eng, Logger: logger})
	if err != nil {
		tb.Fatalf("open replica: %v", err)
	}
	cursors := cursor.NewRegistry(nil, 0)
	tb.Cleanup(func() {
		cursors.CloseAll()
		_ = eng.Close()
	})
	h := New(Deps{Store: store, Cursors: cursors, Logger: logger, Repl: rs, ReplicaSetMember: true})
	return h, server.NewDetachedConn(1, "127.0.0.1:50000")
}

// The replies of a member not yet initiated to what mongosh sends before
// rs.initiate, as mongod 8.0 gives them: reads with a read preference
// that allows a secondary (a direct connection's primaryPreferred) are
// refused with 13436, reads without one with 13435, writes with 10107,
// and each of these NotPrimaryError replies carries the topologyVersion
// hello reports, so that a driver takes it as stale and keeps the member
// selectable.
func TestUninitiatedMemberRefusalsCarryTopologyVersion(t *testing.T) {
	h, c := newUninitiatedHandler(t)
	hello := runOn(h, c, "admin", bson.D{{Key: "hello", Value: 1}})
	tv, ok := bsonutil.Field(hello, "topologyVersion")
	if !ok {
		t.Fatalf("hello without topologyVersion: %v", hello)
	}
	primaryPreferred := bson.E{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}}
	for _, tc := range []struct {
		what string
		body bson.D
		code int32
		msg  string
	}{
		{"mongosh's startup countDocuments", bson.D{{Key: "aggregate", Value: "atlascli"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "managedClusterType", Value: "atlasCliLocalDevCluster"}}}}}},
			{Key: "cursor", Value: bson.D{}}, primaryPreferred}, 13436, "node is not in primary or recovering state"},
		{"find, secondaryOk", bson.D{{Key: "find", Value: "c"}, primaryPreferred}, 13436, "node is not in primary or recovering state"},
		{"find, no read preference", bson.D{{Key: "find", Value: "c"}}, 13435, "not primary and secondaryOk=false"},
		{"insert", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, 10107, "not primary"},
	} {
		reply := runOn(h, c, "admin", tc.body)
		if code, msg := replyCode(reply), errmsgOf(reply); code != tc.code || msg != tc.msg {
			t.Errorf("%s: code %d %q, want %d %q: %v", tc.what, code, msg, tc.code, tc.msg, reply)
		}
		if got, _ := bsonutil.Field(reply, "topologyVersion"); !reflect.DeepEqual(got, tv) {
			t.Errorf("%s: topologyVersion %v, want hello's %v", tc.what, got, tv)
		}
	}
	// Other errors carry none, as mongod's do not.
	reply := runOn(h, c, "admin", bson.D{{Key: "replSetGetStatus", Value: 1}})
	if replyCode(reply) != 94 {
		t.Fatalf("replSetGetStatus: %v", reply)
	}
	if _, has := bsonutil.Field(reply, "topologyVersion"); has {
		t.Errorf("NotYetInitialized with a topologyVersion: %v", reply)
	}
}

func errmsgOf(reply bson.D) string {
	v, _ := bsonutil.Field(reply, "errmsg")
	s, _ := v.(string)
	return s
}

// A member not yet initiated refuses, as mongod 8.0 does, every command
// whose maintenanceOk is false, in mongod's order: a read that could have
// opted in to a secondary and did not with 13435, a write with 10107, and
// the rest with 13436 whatever the read preference; each refusal carries
// hello's topologyVersion. It still answers what mongod answers there:
// the handshake, the commands mongosh runs on connect, rs.initiate's
// replSetInitiate (checked in TestReplicaSetMongosh) and the commands
// whose maintenanceOk is true, dataSize among them, and usersInfo and
// rolesInfo when the read preference allows a secondary. A user or role
// is made on the primary only (10107), as in mongod.
func TestUninitiatedMemberRefusesWhatMongodRefuses(t *testing.T) {
	h, c := newUninitiatedHandler(t)
	tv, _ := bsonutil.Field(runOn(h, c, "admin", bson.D{{Key: "hello", Value: 1}}), "topologyVersion")
	primaryPreferred := bson.E{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}}
	const (
		notPrimaryOrSecondary = "node is not in primary or recovering state"
		noSecondaryOk         = "not primary and secondaryOk=false"
	)
	refused := []struct {
		db   string
		body bson.D
		code int32
		msg  string
	}{
		{"test", bson.D{{Key: "count", Value: "c"}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "count", Value: "c"}}, 13435, noSecondaryOk},
		{"test", bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "a"}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}}, 13435, noSecondaryOk},
		{"admin", bson.D{{Key: "listDatabases", Value: 1}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"admin", bson.D{{Key: "listDatabases", Value: 1}}, 13435, noSecondaryOk},
		{"test", bson.D{{Key: "listCollections", Value: 1}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "listIndexes", Value: "c"}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "getMore", Value: int64(1)}, {Key: "collection", Value: "c"}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{int64(1)}}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "dbStats", Value: 1}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "dbstats", Value: 1}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "collStats", Value: "c"}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "validate", Value: "c"}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "validate", Value: "c"}, primaryPreferred}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "dbHash", Value: 1}}, 13436, notPrimaryOrSecondary},
		{"test", bson.D{{Key: "create", Value: "c"}, primaryPreferred}, 10107, "not primary"},
		{"test", bson.D{{Key: "collMod", Value: "c"}}, 10107, "not primary"},
		{"admin", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}, 10107, "not primary"},
		{"admin", bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}, primaryPreferred}, 10107, "not primary"},
		{"admin", bson.D{{Key: "usersInfo", Value: "u"}}, 13435, noSecondaryOk},
		{"admin", bson.D{{Key: "rolesInfo", Value: "r"}}, 13435, noSecondaryOk},
	}
	for _, tc := range refused {
		reply := runOn(h, c, tc.db, tc.body)
		if code, msg := replyCode(reply), errmsgOf(reply); code != tc.code || msg != tc.msg {
			t.Errorf("%v: code %d %q, want %d %q: %v", tc.body, code, msg, tc.code, tc.msg, reply)
		}
		if got, _ := bsonutil.Field(reply, "topologyVersion"); !reflect.DeepEqual(got, tv) {
			t.Errorf("%v: topologyVersion %v, want hello's %v", tc.body, got, tv)
		}
	}
	answered := []struct {
		db   string
		body bson.D
	}{
		{"admin", bson.D{{Key: "hello", Value: 1}}},
		{"admin", bson.D{{Key: "isMaster", Value: 1}}},
		{"admin", bson.D{{Key: "ismaster", Value: 1}, primaryPreferred}},
		{"admin", bson.D{{Key: "ping", Value: 1}}},
		{"admin", bson.D{{Key: "buildInfo", Value: 1}}},
		{"admin", bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}}},
		{"admin", bson.D{{Key: "serverStatus", Value: 1}}},
		{"admin", bson.D{{Key: "getCmdLineOpts", Value: 1}}},
		{"admin", bson.D{{Key: "getLog", Value: "startupWarnings"}}},
		{"admin", bson.D{{Key: "connectionStatus", Value: 1}}},
		{"admin", bson.D{{Key: "hostInfo", Value: 1}}},
		{"admin", bson.D{{Key: "listCommands", Value: 1}}},
		{"admin", bson.D{{Key: "whatsmyuri", Value: 1}}},
		{"admin", bson.D{{Key: "currentOp", Value: 1}}},
		{"admin", bson.D{{Key: "endSessions", Value: bson.A{}}}},
		{"test", bson.D{{Key: "dataSize", Value: "test.c"}}},
		// maintenanceOk: answered once the read preference allows a
		// secondary.
		{"admin", bson.D{{Key: "usersInfo", Value: "u"}, primaryPreferred}},
		{"admin", bson.D{{Key: "rolesInfo", Value: "r"}, primaryPreferred}},
	}
	for _, tc := range answered {
		if reply := runOn(h, c, tc.db, tc.body); lookupOK(reply) != 1 {
			t.Errorf("%v refused: %v", tc.body, reply)
		}
	}
}
