package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestSnapshotReadsOutsideTransactions: a find with read concern snapshot
// answers its atClusterTime; its getMores, and later finds, aggregates and
// distincts at that time, read the state of that time, not the writes
// since; a time ahead of the member's and one outside the history are
// refused as mongod refuses them.
func TestSnapshotReadsOutsideTransactions(t *testing.T) {
	rs := startReplSet(t, 1)
	db := rs.client().Database("snap")
	ctx := ctxT(t)
	coll := db.Collection("c")
	for i := 1; i <= 5; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	foreign := db.Collection("f")
	if _, err := foreign.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	reply := runCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	cursor := field(t, reply, "cursor").(bson.D)
	at := field(t, cursor, "atClusterTime").(bson.Timestamp)
	if n := len(field(t, cursor, "firstBatch").(bson.A)); n != 2 {
		t.Fatalf("first batch of %d, want 2", n)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := foreign.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	more := runCmd(t, db, bson.D{{Key: "getMore", Value: field(t, cursor, "id")}, {Key: "collection", Value: "c"}})
	if got := ids(field(t, field(t, more, "cursor").(bson.D), "nextBatch").(bson.A)); got != "[3 4 5]" {
		t.Fatalf("getMore read %s, want [3 4 5]: the snapshot's documents", got)
	}
	atTime := bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}}
	found := runCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: atTime}})
	if got := ids(field(t, field(t, found, "cursor").(bson.D), "firstBatch").(bson.A)); got != "[1 2 3 4 5]" {
		t.Fatalf("find at %v read %s, want [1 2 3 4 5]", at, got)
	}
	agg := runCmd(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: atTime}})
	if got := field(t, field(t, field(t, agg, "cursor").(bson.D), "firstBatch").(bson.A)[0].(bson.D), "n"); got != int32(5) {
		t.Fatalf("aggregate at %v counted %v, want 5", at, got)
	}
	if n := lookupMatches(t, db, bson.D{{Key: "readConcern", Value: atTime}}); n != 1 {
		t.Fatalf("$lookup at %v found %d foreign documents, want 1: the snapshot's", at, n)
	}
	distinct := runCmd(t, db, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "_id"}, {Key: "readConcern", Value: atTime}})
	if got := ids(field(t, distinct, "values").(bson.A)); got != "[1 2 3 4 5]" || field(t, distinct, "atClusterTime") != at {
		t.Fatalf("distinct at %v: %s, atClusterTime %v", at, got, field(t, distinct, "atClusterTime"))
	}
	checkSnapshotRefusals(t, db, at)
}

// lookupMatches runs an aggregate on c's document 1 with a $lookup of
// f's documents whose k is 1, with the extra fields given, and returns how
// many it found.
func lookupMatches(t *testing.T, db *mongo.Database, extra bson.D) int {
	t.Helper()
	pipeline := bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: 1}}}},
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "f"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "k"}, {Key: "as", Value: "fs"}}}},
	}
	cmd := append(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}, extra...)
	reply := runCmd(t, db, cmd)
	batch := field(t, field(t, reply, "cursor").(bson.D), "firstBatch").(bson.A)
	if len(batch) != 1 {
		t.Fatalf("$lookup: %d documents, want 1", len(batch))
	}
	return len(field(t, batch[0].(bson.D), "fs").(bson.A))
}

// TestLookupReadsTheTransactionSnapshot: a $lookup inside a transaction
// reads the transaction's snapshot, not a write committed since.
func TestLookupReadsTheTransactionSnapshot(t *testing.T) {
	rs := startReplSet(t, 1)
	cl := rs.client()
	db := cl.Database("snap")
	ctx := ctxT(t)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("f").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	sess, sctx := startTxnSession(t, cl)
	if err := db.Collection("c").FindOne(sctx, bson.D{}).Err(); err != nil { // the snapshot is taken here
		t.Fatal(err)
	}
	if _, err := db.Collection("f").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	cur, err := db.Collection("c").Aggregate(sctx, bson.A{
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "f"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "k"}, {Key: "as", Value: "fs"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(sctx, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || len(out[0]["fs"].(bson.A)) != 1 {
		t.Fatalf("$lookup in the transaction read %v, want one foreign document: the snapshot's", out)
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n := lookupMatches(t, db, nil); n != 2 {
		t.Fatalf("$lookup after the commit found %d, want 2", n)
	}
}

// startTxnSession starts a session with a transaction (snapshot,
// majority), ended when the test ends, and returns it with the context
// its statements run in.
func startTxnSession(t *testing.T, cl *mongo.Client) (*mongo.Session, context.Context) {
	t.Helper()
	ctx := ctxT(t)
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	if err := sess.StartTransaction(txnOptions()); err != nil {
		t.Fatal(err)
	}
	return sess, mongo.NewSessionContext(ctx, sess)
}

func checkSnapshotRefusals(t *testing.T, db *mongo.Database, at bson.Timestamp) {
	t.Helper()
	future := bson.Timestamp{T: at.T + 3600, I: 1}
	ce := cmdErr(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: future}}}})
	wantFuture := fmt.Sprintf("readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: Timestamp(%d, 1); current clusterTime: ", future.T)
	if ce.Code != 72 || len(ce.Message) < len(wantFuture) || ce.Message[:len(wantFuture)] != wantFuture {
		t.Errorf("a future atClusterTime: %d %q, want 72 %q…", ce.Code, ce.Message, wantFuture)
	}
	old := bson.Timestamp{T: at.T - 3600, I: 1}
	ce = cmdErr(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: old}}}})
	wantOld := fmt.Sprintf("Read timestamp Timestamp(%d, 1) is older than the oldest available timestamp.", old.T)
	if ce.Code != 239 || ce.Name != "SnapshotTooOld" || ce.Message != wantOld {
		t.Errorf("an atClusterTime outside the history: %d %s %q, want 239 SnapshotTooOld %q", ce.Code, ce.Name, ce.Message, wantOld)
	}
}

// ids formats the _ids of documents, or values, in order.
func ids(docs bson.A) string {
	out := make([]any, len(docs))
	for i, d := range docs {
		if doc, ok := d.(bson.D); ok {
			out[i] = doc[0].Value
			continue
		}
		out[i] = d
	}
	return fmt.Sprint(out)
}
