package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// sessionWork is what a session holds that killing it ends: a transaction
// in progress, an open cursor, and a command in flight.
type sessionWork struct {
	txn, cursorSess, opSess *mongo.Session
	txnColl                 *mongo.Collection
	cursor                  *mongo.Cursor
	opDone                  chan error // the command in flight's error; nil for none
}

// TestKillSessionsEndsTheirWork: killSessions and each form of
// killAllSessions end what their sessions hold (the transaction is
// aborted, the cursor is gone, the command in flight is interrupted),
// while sessions they do not name keep theirs.
func TestKillSessionsEndsTheirWork(t *testing.T) {
	rs := startReplSet(t, 1, "--setParameter", "enableTestCommands=1")
	victims := rs.client(options.Client().SetAppName("victim").SetRetryReads(false).SetRetryWrites(false))
	others := rs.client(options.Client().SetAppName("bystander"))
	forms := []struct {
		name   string
		cmd    func(v *sessionWork) bson.D
		spares bool // sessions it does not name keep their work
	}{
		{"killSessions", func(v *sessionWork) bson.D {
			return bson.D{{Key: "killSessions", Value: bson.A{v.txn.ID(), v.cursorSess.ID(), v.opSess.ID()}}}
		}, true},
		{"killAllSessions", func(*sessionWork) bson.D {
			return bson.D{{Key: "killAllSessions", Value: bson.A{}}}
		}, false},
		{"killAllSessions of a user", func(*sessionWork) bson.D {
			return bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: ""}, {Key: "db", Value: ""}}}}}
		}, false},
	}
	for i, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			db := fmt.Sprintf("kill%d", i)
			for _, cl := range []*mongo.Client{victims, others} {
				if _, err := cl.Database(db).Collection("docs").InsertMany(ctxT(t), []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}); err != nil && cl == victims {
					t.Fatal(err)
				}
			}
			victim := holdWork(t, victims, db, "v", true)
			bystander := holdWork(t, others, db, "b", false)
			runCmd(t, others.Database("admin"), form.cmd(victim))
			checkWorkEnded(t, victim)
			if form.spares {
				checkWorkKept(t, bystander)
			}
		})
	}
}

// holdWork starts a transaction that inserts _id tag, opens a cursor of
// batch 1, and with inFlight a ping held by the failCommand fail point.
func holdWork(t *testing.T, cl *mongo.Client, db, tag string, inFlight bool) *sessionWork {
	t.Helper()
	w := &sessionWork{txnColl: cl.Database(db).Collection("txn")}
	var err error
	for _, s := range []**mongo.Session{&w.txn, &w.cursorSess, &w.opSess} {
		if *s, err = cl.StartSession(); err != nil {
			t.Fatal(err)
		}
		sess := *s
		t.Cleanup(func() { sess.EndSession(context.Background()) })
	}
	if err := w.txn.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.txnColl.InsertOne(mongo.NewSessionContext(ctxT(t), w.txn), bson.D{{Key: "_id", Value: tag}}); err != nil {
		t.Fatal(err)
	}
	w.cursor, err = cl.Database(db).Collection("docs").Find(mongo.NewSessionContext(ctxT(t), w.cursorSess), bson.D{}, options.Find().SetBatchSize(1))
	if err != nil || !w.cursor.Next(ctxT(t)) {
		t.Fatalf("open a cursor: %v", err)
	}
	if !inFlight {
		return w
	}
	failCommand(t, cl, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"ping"}},
		{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 30000}, {Key: "appName", Value: "victim"}})
	w.opDone = make(chan error, 1)
	go func() {
		w.opDone <- cl.Database("admin").RunCommand(mongo.NewSessionContext(context.Background(), w.opSess), bson.D{{Key: "ping", Value: 1}}).Err()
	}()
	for deadline := time.Now().Add(10 * time.Second); heldPings(t, cl) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ping was not held")
		}
	}
	return w
}

// heldPings counts the pings in flight, as currentOp shows them.
func heldPings(t *testing.T, cl *mongo.Client) int {
	t.Helper()
	cur, err := cl.Database("admin").Aggregate(ctxT(t), bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "command.ping", Value: bson.D{{Key: "$exists", Value: true}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []bson.D
	if err := cur.All(ctxT(t), &ops); err != nil {
		t.Fatal(err)
	}
	return len(ops)
}

func checkWorkEnded(t *testing.T, w *sessionWork) {
	t.Helper()
	select {
	case err := <-w.opDone:
		wantCode(t, err, 11601, "")
	case <-time.After(10 * time.Second):
		t.Fatal("the command in flight was not interrupted")
	}
	err := w.txn.CommitTransaction(ctxT(t))
	wantCode(t, err, 251, "")
	if n, err := w.txnColl.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 0 {
		t.Fatalf("the aborted transaction's insert: %d documents, %v", n, err)
	}
	for w.cursor.Next(ctxT(t)) {
	}
	wantCode(t, w.cursor.Err(), 43, "")
}

func checkWorkKept(t *testing.T, w *sessionWork) {
	t.Helper()
	if err := w.txn.CommitTransaction(ctxT(t)); err != nil {
		t.Fatalf("the spared transaction: %v", err)
	}
	n := 1
	for w.cursor.Next(ctxT(t)) {
		n++
	}
	if err := w.cursor.Err(); err != nil || n != 3 {
		t.Fatalf("the spared cursor gave %d documents, %v", n, err)
	}
}

// TestKillSessionsRefusesBadArguments: both commands check their
// arguments as mongod does.
func TestKillSessionsRefusesBadArguments(t *testing.T) {
	admin := newDB(t).Client().Database("admin")
	cases := []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "killSessions", Value: 1}}, 14},
		{bson.D{{Key: "killSessions", Value: bson.A{bson.D{}}}}, 40414},
		{bson.D{{Key: "killAllSessions", Value: 1}}, 14},
		{bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: "u"}}}}}, 40414},
	}
	for _, tc := range cases {
		err := admin.RunCommand(ctxT(t), tc.cmd).Err()
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(int(tc.code)) {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
}

// TestKillSessionsThroughTheRouter: killSessions and killAllSessions
// through the router close the named sessions' cursors, merged over both
// shards, and leave another session's open.
func TestKillSessionsThroughTheRouter(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	addShardsAndShard(t, c, cl, "ks", "docs")
	coll := cl.Database("ks").Collection("docs")
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{"killSessions", "killAllSessions"} {
		victim, bystander := openSessionCursor(t, cl, coll), openSessionCursor(t, cl, coll)
		cmd := bson.D{{Key: "killAllSessions", Value: bson.A{}}}
		if form == "killSessions" {
			cmd = bson.D{{Key: "killSessions", Value: bson.A{victim.sess.ID()}}}
		}
		runCmd(t, cl.Database("admin"), cmd)
		for victim.cur.Next(ctxT(t)) {
		}
		wantCode(t, victim.cur.Err(), 43, "")
		if form == "killSessions" {
			n := 1
			for bystander.cur.Next(ctxT(t)) {
				n++
			}
			if err := bystander.cur.Err(); err != nil || n != len(docs) {
				t.Fatalf("the other session's cursor gave %d documents, %v", n, err)
			}
		}
	}
}

type sessionCursor struct {
	sess *mongo.Session
	cur  *mongo.Cursor
}

// openSessionCursor opens a find of batch 1 in a new session and reads
// its first document.
func openSessionCursor(t *testing.T, cl *mongo.Client, coll *mongo.Collection) sessionCursor {
	t.Helper()
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	cur, err := coll.Find(mongo.NewSessionContext(ctxT(t), sess), bson.D{}, options.Find().SetBatchSize(1))
	if err != nil || !cur.Next(ctxT(t)) {
		t.Fatalf("open a cursor: %v", err)
	}
	return sessionCursor{sess: sess, cur: cur}
}
