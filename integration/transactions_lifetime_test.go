package integration

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestTransactionLifetimeLimit: with transactionLifetimeLimitSeconds
// lowered by setParameter, the reaper aborts an idle transaction; its
// later statements and its commit answer NoSuchTransaction with mongod's
// message, its write is gone, and serverStatus counts the abort.
func TestTransactionLifetimeLimit(t *testing.T) {
	rs := startReplSet(t, 1)
	cl := rs.client()
	ctx := ctxT(t)
	admin := cl.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := cl.Database("test").Collection("lifetime")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	waitAborted(t, admin, 1)
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}})
	wantAbortedTransaction(t, err)
	wantAbortedTransaction(t, sess.CommitTransaction(ctx))
	if n := countDocs(t, coll); n != 1 {
		t.Fatalf("after the reaper: %d documents, want 1 (the transaction's write gone)", n)
	}
}

// abortedMessage is mongod's NoSuchTransaction message for a statement
// of a transaction that was aborted.
var abortedMessage = regexp.MustCompile(`^Transaction with \{ txnNumber: \d+ \} has been aborted\.$`)

func wantAbortedTransaction(t *testing.T, err error) {
	t.Helper()
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(251) {
		t.Fatalf("got %v, want NoSuchTransaction (251)", err)
	}
	var ce mongo.CommandError
	var we mongo.WriteException
	msg := err.Error()
	switch {
	case errors.As(err, &ce):
		msg = ce.Message
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		msg = we.WriteErrors[0].Message
	}
	if !abortedMessage.MatchString(msg) {
		t.Fatalf("NoSuchTransaction's message %q, want mongod's %q", msg, abortedMessage)
	}
}

// waitAborted waits, boundedly, until serverStatus counts n aborted
// transactions: the reaper runs on its own goroutine.
func waitAborted(t *testing.T, admin *mongo.Database, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, err := admin.RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := status.Lookup("transactions", "totalAborted").Int64OK()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serverStatus.transactions.totalAborted = %d after 30s, want %d", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
