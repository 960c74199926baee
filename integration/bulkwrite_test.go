package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// MongoDB 8.0's client bulk write: several namespaces, one command.
func TestClientBulkWriteAcrossNamespaces(t *testing.T) {
	client := newDB(t).Client()
	ctx := ctxT(t)
	upsert := true
	writes := []mongo.ClientBulkWrite{
		{Database: "a", Collection: "x", Model: &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}}},
		{Database: "b", Collection: "y", Model: &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 5}}}},
		{Database: "a", Collection: "x", Model: &mongo.ClientUpdateOneModel{Filter: bson.D{{Key: "_id", Value: 1}}, Update: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
		{Database: "b", Collection: "y", Model: &mongo.ClientUpdateOneModel{Filter: bson.D{{Key: "_id", Value: 2}}, Update: bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 9}}}}, Upsert: &upsert}},
		{Database: "b", Collection: "y", Model: &mongo.ClientDeleteOneModel{Filter: bson.D{{Key: "_id", Value: 1}}}},
	}
	res, err := client.BulkWrite(ctx, writes, options.ClientBulkWrite().SetVerboseResults(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.InsertedCount != 2 || res.MatchedCount != 1 || res.ModifiedCount != 1 || res.UpsertedCount != 1 || res.DeletedCount != 1 {
		t.Fatalf("totals %+v", res)
	}
	if up := res.UpdateResults[3]; up.UpsertedID != int32(2) {
		t.Fatalf("upserted id: %+v", res.UpdateResults)
	}
	var x bson.M
	if err := client.Database("a").Collection("x").FindOne(ctx, bson.D{}).Decode(&x); err != nil || x["n"] != int32(2) {
		t.Fatalf("a.x: %v %v", x, err)
	}
	if n, _ := client.Database("b").Collection("y").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("b.y holds %d documents", n)
	}

	// Ordered: the first error stops the batch; unordered goes on.
	dup := []mongo.ClientBulkWrite{
		{Database: "a", Collection: "x", Model: &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 1}}}},
		{Database: "a", Collection: "x", Model: &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 7}}}},
	}
	_, err = client.BulkWrite(ctx, dup)
	var be mongo.ClientBulkWriteException
	if !errorAs(err, &be) || len(be.WriteErrors) != 1 || be.WriteErrors[0].Code != 11000 {
		t.Fatalf("ordered duplicate: %v", err)
	}
	if n, _ := client.Database("a").Collection("x").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("ordered batch went on after its error: %d", n)
	}
	_, err = client.BulkWrite(ctx, dup, options.ClientBulkWrite().SetOrdered(false))
	if !errorAs(err, &be) || len(be.WriteErrors) != 1 || be.PartialResult == nil || be.PartialResult.InsertedCount != 1 {
		t.Fatalf("unordered duplicate: %v", err)
	}

	// w: 0 is fire and forget; the writes still happen.
	w0 := []mongo.ClientBulkWrite{{Database: "a", Collection: "w", Model: &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 1}}}}}
	if _, err := client.BulkWrite(ctx, w0, options.ClientBulkWrite().SetWriteConcern(writeconcern.Unacknowledged()).SetOrdered(false)); err != nil {
		t.Fatalf("w: 0: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := client.Database("a").Collection("w").CountDocuments(ctx, bson.D{})
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("w: 0 write never landed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The raw reply: the cursor of results, errorsOnly, the admin rule.
func TestBulkWriteReplyShape(t *testing.T) {
	db := newDB(t)
	admin := db.Client().Database("admin")
	cmd := func(errorsOnly bool) bson.D {
		return bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{
			bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 1}}}},
			bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 1}}}},
			bson.D{{Key: "delete", Value: 0}, {Key: "filter", Value: bson.D{}}, {Key: "multi", Value: true}},
		}}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.bw"}}}}, {Key: "ordered", Value: false}, {Key: "errorsOnly", Value: errorsOnly}}
	}
	res := runCmd(t, admin, cmd(false))
	cur := field(t, res, "cursor").(bson.D)
	batch := field(t, cur, "firstBatch").(bson.A)
	if field(t, cur, "ns") != "admin.$cmd.bulkWrite" || len(batch) != 3 || field(t, res, "nErrors") != int32(1) || field(t, res, "nDeleted") != int32(1) {
		t.Fatalf("reply %v", res)
	}
	failed := batch[1].(bson.D)
	if field(t, failed, "ok") != 0.0 || field(t, failed, "idx") != int32(1) || field(t, failed, "code") != int32(11000) {
		t.Fatalf("error entry %v", failed)
	}
	res = runCmd(t, admin, cmd(true))
	if batch := field(t, field(t, res, "cursor").(bson.D), "firstBatch").(bson.A); len(batch) != 1 {
		t.Fatalf("errorsOnly: %v", batch)
	}
	ce := cmdErr(t, db, cmd(false))
	if ce.Code != 13 {
		t.Fatalf("bulkWrite outside admin: %v", ce)
	}
}

// TestBulkWriteInsertRuns: consecutive inserts into one namespace commit
// in groups, and still answer op by op, in order: a duplicate in the
// middle of a run fails alone, stops an ordered bulkWrite there and not an
// unordered one.
func TestBulkWriteInsertRuns(t *testing.T) {
	admin := newDB(t).Client().Database("admin")
	for _, ordered := range []bool{false, true} {
		ns := bson.A{bson.D{{Key: "ns", Value: fmt.Sprintf("test.runs%v", ordered)}}, bson.D{{Key: "ns", Value: "test.other"}}}
		var ops bson.A
		for i := range 150 {
			id := i
			if i == 100 {
				id = 5 // a duplicate in the run's second group
			}
			ops = append(ops, bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: id}}}})
		}
		ops = append(ops, bson.D{{Key: "insert", Value: 1}, {Key: "document", Value: bson.D{}}})
		for i := range 3 {
			ops = append(ops, bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 1000 + i}}}})
		}
		res := runCmd(t, admin, bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: ns}, {Key: "ordered", Value: ordered}})
		batch := field(t, field(t, res, "cursor").(bson.D), "firstBatch").(bson.A)
		wantResults, wantInserted := len(ops), int32(len(ops)-1)
		if ordered {
			wantResults, wantInserted = 101, 100
		}
		if len(batch) != wantResults || field(t, res, "nInserted") != wantInserted || field(t, res, "nErrors") != int32(1) {
			t.Fatalf("ordered %v: %d results, nInserted %v, nErrors %v; want %d, %d, 1", ordered, len(batch), field(t, res, "nInserted"), field(t, res, "nErrors"), wantResults, wantInserted)
		}
		for i, e := range batch {
			entry := e.(bson.D)
			wantOK := 1.0
			if i == 100 {
				wantOK = 0
			}
			if field(t, entry, "idx") != int32(i) || field(t, entry, "ok") != wantOK {
				t.Fatalf("ordered %v: result %d is %v", ordered, i, entry)
			}
		}
		if code := field(t, batch[100].(bson.D), "code"); code != int32(11000) {
			t.Fatalf("ordered %v: the duplicate's code %v", ordered, code)
		}
	}
}
