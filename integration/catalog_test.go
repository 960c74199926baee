package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestHandshakeAndAdminCommands(t *testing.T) {
	db := newDB(t)
	admin := db.Client().Database("admin")
	hello := runCmd(t, admin, bson.D{{Key: "hello", Value: 1}})
	if field(t, hello, "isWritablePrimary") != true || field(t, hello, "maxWireVersion") != int32(25) {
		t.Fatalf("hello: %v", hello)
	}
	legacy := runCmd(t, admin, bson.D{{Key: "isMaster", Value: 1}})
	if field(t, legacy, "ismaster") != true {
		t.Fatalf("isMaster must answer with lower-case ismaster: %v", legacy)
	}
	bi := runCmd(t, admin, bson.D{{Key: "buildInfo", Value: 1}})
	if field(t, bi, "version") != "8.0.0" {
		t.Fatalf("buildInfo: %v", bi)
	}
	for _, cmd := range []string{"ping", "getCmdLineOpts", "hostInfo", "serverStatus", "connectionStatus", "whatsmyuri", "listDatabases", "endSessions"} {
		var c bson.D
		if cmd == "endSessions" {
			c = bson.D{{Key: cmd, Value: bson.A{}}}
		} else {
			c = bson.D{{Key: cmd, Value: 1}}
		}
		runCmd(t, admin, c)
	}
	ss := runCmd(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	ttl := field(t, field(t, ss, "metrics").(bson.D), "ttl").(bson.D)
	for _, k := range []string{"deletedDocuments", "passes", "subPasses", "deletedKeys"} {
		field(t, ttl, k)
	}
	// Without access control the one start-up warning is mongod's about it.
	gl := runCmd(t, admin, bson.D{{Key: "getLog", Value: "startupWarnings"}})
	if lines := field(t, gl, "log").(bson.A); len(lines) != 1 || !strings.Contains(lines[0].(string), "Access control is not enabled") {
		t.Fatalf("getLog: %v", gl)
	}
	gp := runCmd(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}})
	if field(t, gp, "ttlMonitorSleepSecs") != int32(60) {
		t.Fatalf("getParameter: %v", gp)
	}
	sp := runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 5}})
	if field(t, sp, "was") != int32(60) {
		t.Fatalf("setParameter: %v", sp)
	}
	du := runCmd(t, db, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	if field(t, du, "n") != int32(0) {
		t.Fatalf("dropAllUsersFromDatabase: %v", du)
	}
}

func TestCommandErrors(t *testing.T) {
	db := newDB(t)
	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"unknown command", bson.D{{Key: "frobnicate", Value: 1}}, 59, "no such command: 'frobnicate'"},
		{"atlasVersion is unknown, as on mongod", bson.D{{Key: "atlasVersion", Value: 1}}, 59, ""},
		{"unknown field", bson.D{{Key: "find", Value: "c"}, {Key: "bogus", Value: 1}}, 40415, "BSON field 'find.bogus' is an unknown field."},
		{"wrong type", bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: "x"}}, 14, "BSON field 'find.limit' is the wrong type 'string'"},
		{"bad filter operator", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$bogus", Value: 1}}}}}}, 2, "unknown operator: $bogus"},
		{"getMore unknown cursor", bson.D{{Key: "getMore", Value: int64(42)}, {Key: "collection", Value: "c"}}, 43, "cursor id 42 not found"},
		{"listIndexes missing collection", bson.D{{Key: "listIndexes", Value: "nope"}}, 26, ""},
		{"empty createIndexes", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{}}}, 2, "Must specify at least one index to create"},
		{"aggregate without cursor", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}, 9, ""},
		{"unknown stage", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$bogus", Value: 1}}}}, {Key: "cursor", Value: bson.D{}}}, 40324, ""},
		{"transactions need a replica set", bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}}, 20, ""},
		{"maxTimeMS out of range", bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: -1}}, 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := cmdErr(t, db, tc.cmd)
			if ce.Code != tc.code {
				t.Fatalf("code %d (%s), want %d", ce.Code, ce.Message, tc.code)
			}
			if tc.msg != "" && !contains(ce.Message, tc.msg) {
				t.Fatalf("message %q lacks %q", ce.Message, tc.msg)
			}
		})
	}
	// The connection survives every error above.
	runCmd(t, db, bson.D{{Key: "ping", Value: 1}})
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestCollectionsAndDatabases(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	if err := db.CreateCollection(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, db.CreateCollection(ctx, "a"), 48, "Collection test.a already exists.")
	if _, err := db.Collection("b").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) != 2 {
		t.Fatalf("listCollections: %v %v", names, err)
	}
	dbs, err := db.Client().ListDatabaseNames(ctx, bson.D{})
	if err != nil || len(dbs) != 1 || dbs[0] != "test" {
		t.Fatalf("listDatabases: %v %v", dbs, err)
	}
	runCmd(t, db.Client().Database("admin"), bson.D{{Key: "renameCollection", Value: "test.b"}, {Key: "to", Value: "test.c"}})
	var got bson.M
	if err := db.Collection("c").FindOne(ctx, bson.D{}).Decode(&got); err != nil || got["x"] != int32(1) {
		t.Fatalf("renamed collection keeps its data: %v %v", got, err)
	}
	if err := db.Collection("c").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ = db.ListCollectionNames(ctx, bson.D{})
	if len(names) != 1 {
		t.Fatalf("after drop: %v", names)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if dbs, _ = db.Client().ListDatabaseNames(ctx, bson.D{}); len(dbs) != 0 {
		t.Fatalf("after dropDatabase: %v", dbs)
	}
}

func TestIndexesCatalog(t *testing.T) {
	db := newDB(t)
	c := db.Collection("s")
	ctx := ctxT(t)
	name, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "token", Value: 1}}, Options: options.Index().SetUnique(true)})
	if err != nil || name != "token_1" {
		t.Fatalf("createIndex: %q %v", name, err)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "token", Value: "t1"}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "token", Value: "t1"}})
	wantCode(t, err, 11000, `index: token_1 dup key: { token: "t1" }`)
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].Name != "token_1" || specs[1].Unique == nil || !*specs[1].Unique {
		t.Fatalf("listIndexes: %+v %v", specs, err)
	}
	again := runCmd(t, db, bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}, {Key: "unique", Value: true}}}}})
	if field(t, again, "note") != "all indexes already exist" {
		t.Fatalf("identical index: %v", again)
	}
	ce := cmdErr(t, db, bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "other", Value: 1}}}, {Key: "name", Value: "token_1"}}}}})
	if ce.Code != 86 {
		t.Fatalf("same name, other key: %v", ce)
	}
	if err := c.Indexes().DropOne(ctx, "token_1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Indexes().DropOne(ctx, "token_1"), 27, "index not found with name [token_1]")
	wantCode(t, c.Indexes().DropOne(ctx, "_id_"), 72, "cannot drop _id index")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "token", Value: "t1"}}); err != nil {
		t.Fatalf("after dropping the unique index duplicates are allowed: %v", err)
	}
}
