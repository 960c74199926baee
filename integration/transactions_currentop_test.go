package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// TestCurrentOpShowsIdleTransactions: a session in a transaction with no
// statement running shows in currentOp and $currentOp as mongod 8.0's
// idleSession entry, with the transaction sub-document's fields; not
// with idleSessions: false; and no longer once it commits.
func TestCurrentOpShowsIdleTransactions(t *testing.T) {
	rs := startReplSet(t, 1)
	cl := rs.client()
	ctx := ctxT(t)
	admin := cl.Database("admin")
	coll := cl.Database("test").Collection("curop")
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(options.Transaction().SetReadConcern(readconcern.Snapshot())); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	idle := bson.D{{Key: "type", Value: "idleSession"}}
	views := []struct {
		name string
		run  func() []bson.Raw
		want int
	}{
		{"currentOp command", func() []bson.Raw { return currentOpCommand(t, admin, idle) }, 1},
		{"$currentOp default", func() []bson.Raw { return currentOpStage(t, admin, bson.D{}, idle) }, 1},
		{"$currentOp idleSessions true", func() []bson.Raw {
			return currentOpStage(t, admin, bson.D{{Key: "idleSessions", Value: true}}, idle)
		}, 1},
		{"$currentOp idleSessions false", func() []bson.Raw {
			return currentOpStage(t, admin, bson.D{{Key: "idleSessions", Value: false}}, idle)
		}, 0},
	}
	for _, v := range views {
		got := v.run()
		if len(got) != v.want {
			t.Fatalf("%s: %d idle sessions, want %d: %v", v.name, len(got), v.want, got)
		}
		if v.want == 1 {
			wantIdleSessionEntry(t, v.name, got[0], sess)
		}
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if got := currentOpStage(t, admin, bson.D{}, idle); len(got) != 0 {
		t.Fatalf("after commit: %v, want no idle session", got)
	}
}

func currentOpCommand(t *testing.T, admin *mongo.Database, filter bson.D) []bson.Raw {
	t.Helper()
	cmd := append(bson.D{{Key: "currentOp", Value: 1}}, filter...)
	raw, err := admin.RunCommand(ctxT(t), cmd).Raw()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := raw.Lookup("inprog").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		out = append(out, v.Document())
	}
	return out
}

func currentOpStage(t *testing.T, admin *mongo.Database, spec, filter bson.D) []bson.Raw {
	t.Helper()
	cur, err := admin.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$currentOp", Value: spec}}, bson.D{{Key: "$match", Value: filter}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantIdleSessionEntry checks the entry's shape and that its figures
// agree: open time is active plus inactive, the expiry is the lifetime
// limit (60 s by default) after the start.
func wantIdleSessionEntry(t *testing.T, view string, doc bson.Raw, sess *mongo.Session) {
	t.Helper()
	if desc, _ := doc.Lookup("desc").StringValueOK(); desc != "inactive transaction" {
		t.Errorf("%s: desc %q", view, desc)
	}
	if active, ok := doc.Lookup("active").BooleanOK(); !ok || active {
		t.Errorf("%s: active %v, want false", view, doc.Lookup("active"))
	}
	if !bson.Raw(sess.ID()).Lookup("id").Equal(doc.Lookup("lsid", "id")) {
		t.Errorf("%s: lsid %v, want the session's %v", view, doc.Lookup("lsid"), sess.ID())
	}
	txn := doc.Lookup("transaction").Document()
	params := txn.Lookup("parameters").Document()
	if n, ok := params.Lookup("txnNumber").Int64OK(); !ok || n < 1 {
		t.Errorf("%s: parameters.txnNumber %v", view, params.Lookup("txnNumber"))
	}
	if ac, ok := params.Lookup("autocommit").BooleanOK(); !ok || ac {
		t.Errorf("%s: parameters.autocommit %v, want false", view, params.Lookup("autocommit"))
	}
	if lvl, _ := params.Lookup("readConcern", "level").StringValueOK(); lvl != "snapshot" {
		t.Errorf("%s: parameters.readConcern %v, want level snapshot", view, params.Lookup("readConcern"))
	}
	if _, _, ok := txn.Lookup("readTimestamp").TimestampOK(); !ok {
		t.Errorf("%s: readTimestamp %v, want a timestamp", view, txn.Lookup("readTimestamp"))
	}
	open, _ := txn.Lookup("timeOpenMicros").Int64OK()
	active, _ := txn.Lookup("timeActiveMicros").Int64OK()
	inactive, _ := txn.Lookup("timeInactiveMicros").Int64OK()
	if open <= 0 || active <= 0 || inactive <= 0 || open != active+inactive {
		t.Errorf("%s: timeOpen %d, timeActive %d, timeInactive %d: want positive, open = active + inactive", view, open, active, inactive)
	}
	start := isoTime(t, txn.Lookup("startWallClockTime").StringValue())
	expiry := isoTime(t, txn.Lookup("expiryTime").StringValue())
	if expiry.Sub(start) != 60*time.Second {
		t.Errorf("%s: startWallClockTime %v, expiryTime %v: want 60s apart", view, start, expiry)
	}
}

func isoTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return at
}
