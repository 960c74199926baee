package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

// localSessions lists the server's sessions through {aggregate: 1}.
func localSessions(t *testing.T, db *mongo.Database, spec bson.D) []bson.D {
	t.Helper()
	cur, err := db.Aggregate(ctxT(t), mongo.Pipeline{{{Key: "$listLocalSessions", Value: spec}}})
	if err != nil {
		t.Fatalf("$listLocalSessions: %v", err)
	}
	var out []bson.D
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sessionListed(t *testing.T, sessions []bson.D, id []byte) bson.D {
	t.Helper()
	for _, s := range sessions {
		sid := field(t, field(t, s, "_id").(bson.D), "id").(bson.Binary)
		if bytes.Equal(sid.Data, id) {
			return s
		}
	}
	return nil
}

// The server keeps the sessions commands name, as mongod's logical
// session cache does, and $listLocalSessions lists them.
func TestListLocalSessions(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	err = mongo.WithSession(ctx, sess, func(sc context.Context) error {
		return db.Collection("c").FindOne(sc, bson.D{}).Err()
	})
	if err != nil && err != mongo.ErrNoDocuments {
		t.Fatal(err)
	}
	id := sess.ID().Lookup("id").Binary
	_, data := id()
	rec := sessionListed(t, localSessions(t, db, bson.D{{Key: "allUsers", Value: true}}), data)
	if rec == nil {
		t.Fatalf("session %x not listed", data)
	}
	noUser := sha256.Sum256(nil)
	uid := field(t, field(t, rec, "_id").(bson.D), "uid").(bson.Binary)
	if uid.Subtype != 0 || !bytes.Equal(uid.Data, noUser[:]) {
		t.Fatalf("uid %v", uid)
	}
	if _, ok := field(t, rec, "lastUse").(bson.DateTime); !ok {
		t.Fatalf("lastUse %v", rec)
	}
	// endSessions forgets it.
	runCmd(t, db.Client().Database("admin"), bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: data}}}}}})
	if rec := sessionListed(t, localSessions(t, db, bson.D{}), data); rec != nil {
		t.Fatalf("ended session still listed: %v", rec)
	}
	ce := cmdErr(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	if ce.Code != 73 || ce.Message != "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection" {
		t.Fatalf("on a collection: %v", ce)
	}
}

// With access control, a session is its user's: {} lists the caller's
// own, with their name and digest; others' need listSessions.
func TestListLocalSessionsWithAuth(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	root := connect(t, s)
	createUser(t, root, "test", "alice", "alice-pw", bson.A{"readWrite"})
	alice := mustConnectAs(t, s, "alice", "alice-pw", "test", "").Database("test")
	if _, err := alice.Collection("c").InsertOne(ctxT(t), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	own := localSessions(t, alice, bson.D{})
	if len(own) == 0 {
		t.Fatal("alice lists no session of hers")
	}
	digest := sha256.Sum256([]byte("alice@test"))
	for _, rec := range own {
		uid := field(t, field(t, rec, "_id").(bson.D), "uid").(bson.Binary)
		if field(t, rec, "user") != "alice@test" || !bytes.Equal(uid.Data, digest[:]) {
			t.Fatalf("alice's session %v", rec)
		}
	}
	ce := cmdErr(t, alice, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}}}}}}, {Key: "cursor", Value: bson.D{}}})
	if ce.Code != 13 {
		t.Fatalf("allUsers without listSessions: %v", ce)
	}
	all := localSessions(t, root.Database("test"), bson.D{{Key: "allUsers", Value: true}})
	if len(all) <= len(own) {
		t.Fatalf("root lists %d sessions, alice %d", len(all), len(own))
	}
}
