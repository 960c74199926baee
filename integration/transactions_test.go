package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/txncheck"
	"github.com/mayflydb/mayfly/internal/txnload"
)

func txnOptions() *options.TransactionOptionsBuilder {
	return options.Transaction().SetReadConcern(readconcern.Snapshot()).SetWriteConcern(writeconcern.Majority())
}

func countDocs(t *testing.T, coll *mongo.Collection) int64 {
	t.Helper()
	n, err := coll.CountDocuments(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTransactionsOneMemberSet: withTransaction commits and aborts as a
// whole; a write conflict carries TransientTransactionError and the
// driver's retry of the body then commits; the refusals mongod gives.
func TestTransactionsOneMemberSet(t *testing.T) {
	rs := startReplSet(t, 1)
	cl := rs.client()
	ctx := ctxT(t)
	coll := cl.Database("test").Collection("accounts")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 10}}, bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 10}}}); err != nil {
		t.Fatal(err)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)

	transfer := func(ctx context.Context) (any, error) {
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: -3}}}}); err != nil {
			return nil, err
		}
		var mid bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&mid); err != nil {
			return nil, err
		}
		if mid["n"] != int32(7) {
			return nil, errors.New("the transaction does not read its own write")
		}
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 3}}}})
		return nil, err
	}
	if _, err := sess.WithTransaction(ctx, transfer, txnOptions()); err != nil {
		t.Fatalf("withTransaction: %v", err)
	}
	wantBalance(t, coll, 1, 7)
	wantBalance(t, coll, 2, 13)

	errBody := errors.New("the body gives up")
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
			return nil, err
		}
		return nil, errBody
	}, txnOptions())
	if !errors.Is(err, errBody) || countDocs(t, coll) != 2 {
		t.Fatalf("an aborted transaction: %v, %d documents; want its error and 2", err, countDocs(t, coll))
	}

	// A conflict: another session's transaction writes document 1 after
	// this body's snapshot, before its own write. The first attempt gets
	// WriteConflict with the label; the driver runs the body again.
	other, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer other.EndSession(ctx)
	attempts := 0
	var firstErr error
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		attempts++
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Err(); err != nil {
			return nil, err
		}
		if attempts == 1 {
			if _, err := other.WithTransaction(context.WithoutCancel(ctx), func(octx context.Context) (any, error) {
				return coll.UpdateOne(octx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "by", Value: "other"}}}})
			}, txnOptions()); err != nil {
				return nil, err
			}
		}
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "by", Value: "retry"}}}})
		if attempts == 1 {
			firstErr = err
		}
		return nil, err
	}, txnOptions())
	if err != nil || attempts != 2 {
		t.Fatalf("withTransaction after a conflict: %v after %d attempts, want success after 2", err, attempts)
	}
	var le mongo.ServerError
	if !errors.As(firstErr, &le) || !le.HasErrorCode(112) || !le.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("the first attempt's write: %v, want WriteConflict labelled TransientTransactionError", firstErr)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["by"] != "retry" {
		t.Fatalf("after the retry: %v, %v", doc, err)
	}

	wantTransactionRefusals(t, cl, sess)
	status, err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	// Committed: the transfer, the other session's, the retry, _id 50.
	// Aborted: the body that gave up, the conflicted attempt, the
	// duplicate _id. count was refused before any transaction began.
	want := map[string]int64{"totalCommitted": 4, "totalAborted": 3, "totalStarted": 7, "currentOpen": 0}
	for name, n := range want {
		if got, ok := status.Lookup("transactions", name).Int64OK(); !ok || got != n {
			t.Errorf("serverStatus.transactions.%s = %d, want %d", name, got, n)
		}
	}
}

func wantBalance(t *testing.T, coll *mongo.Collection, id int, n int32) {
	t.Helper()
	var doc bson.M
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["n"] != n {
		t.Fatalf("document %d: %v, want n %d", id, doc, n)
	}
}

// wantTransactionRefusals: count and $out inside a transaction, and a
// retried commit of a committed transaction (ok) and of an aborted one
// (NoSuchTransaction).
func wantTransactionRefusals(t *testing.T, cl *mongo.Client, sess *mongo.Session) {
	ctx := ctxT(t)
	db := cl.Database("test")
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	err := db.RunCommand(sctx, bson.D{{Key: "count", Value: "accounts"}}).Err()
	wantCode(t, err, 263, "Cannot run 'count' in a multi-document transaction")
	_ = sess.AbortTransaction(ctx)

	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("accounts").InsertOne(sctx, bson.D{{Key: "_id", Value: 50}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatalf("a retried commit of a committed transaction: %v", err)
	}
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("accounts").InsertOne(sctx, bson.D{{Key: "_id", Value: 50}}); err == nil {
		t.Fatal("a duplicate _id inside a transaction was accepted")
	}
	// The failed statement aborted the transaction on the server.
	_, err = db.Collection("accounts").InsertOne(sctx, bson.D{{Key: "_id", Value: 51}})
	wantCode(t, err, 251, "has been aborted")
	_ = sess.AbortTransaction(ctx)
}

// TestTransactionRefusedOnStandalone: mongod's answer on a standalone.
func TestTransactionRefusedOnStandalone(t *testing.T) {
	s := startServer(t, app.Config{})
	cl := connect(t, s)
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctxT(t))
	_, err = sess.WithTransaction(ctxT(t), func(ctx context.Context) (any, error) {
		return cl.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	})
	wantCode(t, err, 20, "Transaction numbers are only allowed on a replica set member or mongos")
}

// TestTransactionsThreeMemberSet: a committed transaction is one entry,
// seen whole on a secondary; its change events carry lsid and txnNumber
// and one cluster time; the list-append workload from 8 clients checks
// out with txncheck.
func TestTransactionsThreeMemberSet(t *testing.T) {
	rs := startReplSet(t, 3)
	cl := rs.client()
	ctx := ctxT(t)
	db := cl.Database("test")
	coll := db.Collection("pairs")
	if err := db.CreateCollection(ctx, "pairs"); err != nil {
		t.Fatal(err)
	}
	stream, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close(ctx)
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	const pairs = 20
	for i := range pairs {
		if _, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			return coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 2 * i}}, bson.D{{Key: "_id", Value: 2*i + 1}}})
		}, txnOptions()); err != nil {
			t.Fatal(err)
		}
	}
	wantWholePairsOnSecondary(t, rs)
	wantTransactionEvents(t, stream, pairs)
	runListAppend(t, cl)
	wantStepDownAborts(t, rs, cl)
}

// wantStepDownAborts: a primary that steps down aborts its open
// transactions; the commit fails and nothing of the transaction stays.
func wantStepDownAborts(t *testing.T, rs *replSet, cl *mongo.Client) {
	t.Helper()
	ctx := ctxT(t)
	coll := cl.Database("test").Collection("pairs")
	sess, sctx := startTxnSession(t, cl)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "stepdown"}}); err != nil {
		t.Fatal(err)
	}
	old := rs.waitPrimary(-1, 10*time.Second)
	direct := rs.direct(old)
	_ = direct.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetStepDown", Value: 10}, {Key: "secondaryCatchUpPeriodSecs", Value: 5}}).Err()
	status, err := direct.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if open, _ := status.Lookup("transactions", "currentOpen").Int64OK(); open != 0 {
		t.Fatalf("the stepped-down member keeps %d transactions open", open)
	}
	rs.waitPrimary(old, 20*time.Second)
	if err := sess.CommitTransaction(ctx); err == nil {
		t.Fatal("a transaction committed across a step-down")
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "stepdown"}}).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("the aborted transaction's document: %v, want none", err)
	}
}

// wantWholePairsOnSecondary polls a secondary: every read sees an even
// count, the transactions' pairs whole, until all are there.
func wantWholePairsOnSecondary(t *testing.T, rs *replSet) {
	t.Helper()
	sec := rs.client(options.Client().SetReadPreference(readpref.Secondary()))
	coll := sec.Database("test").Collection("pairs")
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := coll.CountDocuments(ctxT(t), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if n%2 != 0 {
			t.Fatalf("a secondary shows %d documents: half a transaction", n)
		}
		if n == 2*20 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a secondary shows %d documents after 20 s, want 40", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantTransactionEvents(t *testing.T, stream *mongo.ChangeStream, pairs int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	for i := range pairs {
		var evs [2]bson.M
		for k := range evs {
			if !stream.Next(ctx) {
				t.Fatalf("change stream ended at pair %d: %v", i, stream.Err())
			}
			if err := stream.Decode(&evs[k]); err != nil {
				t.Fatal(err)
			}
			if evs[k]["lsid"] == nil || evs[k]["txnNumber"] == nil {
				t.Fatalf("event of a transaction without lsid or txnNumber: %v", evs[k])
			}
		}
		if evs[0]["clusterTime"] != evs[1]["clusterTime"] || evs[0]["txnNumber"] != evs[1]["txnNumber"] {
			t.Fatalf("one transaction's events at two cluster times or numbers: %v / %v", evs[0], evs[1])
		}
	}
}

// runListAppend runs 8 clients' list-append transactions over 5 keys
// for about 10 s (at most 3,000 transactions) and checks the history.
func runListAppend(t *testing.T, cl *mongo.Client) {
	t.Helper()
	client := txnload.NewMongoClient(cl, "jepsen")
	ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Second)
	defer cancel()
	if err := client.SetupListAppend(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	rec := txnload.NewRecorder[[]txncheck.MicroOp](clock.Real{})
	cfg := txnload.ListAppendConfig{Load: txnload.Load{Clients: 8, Txns: 3000, Seed: 38}, Keys: 5, MaxOps: 4}
	if err := txnload.RunListAppend(ctx, cfg, client, rec); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	res, counts, err := txnload.CheckListAppend(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("list-append: %d transactions, ok %d, fail %d, info %d; anomalies %v",
		res.Txns, counts[txncheck.Committed], counts[txncheck.Aborted], counts[txncheck.Indeterminate], res.Counts)
	if !res.Valid() {
		t.Fatalf("snapshot isolation broken: %s", res)
	}
	if counts[txncheck.Committed] < 50 {
		t.Fatalf("only %d transactions committed in 10 s", counts[txncheck.Committed])
	}
}
