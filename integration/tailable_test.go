package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestTailableAwaitDataCursorOnCappedCollection(t *testing.T) {
	db := newDB(t)
	runCmd(t, db, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}})
	c := db.Collection("log")
	for i := 1; i <= 3; i++ {
		insertDocs(t, c, bson.D{{Key: "_id", Value: i}, {Key: "level", Value: "info"}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur, err := c.Find(ctx, bson.D{{Key: "level", Value: "info"}}, options.Find().SetCursorType(options.TailableAwait).SetBatchSize(2).SetMaxAwaitTime(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	for i := 1; i <= 3; i++ {
		if !cur.Next(ctx) || cur.Current.Lookup("_id").Int32() != int32(i) {
			t.Fatalf("document %d: %v %v", i, cur.Current, cur.Err())
		}
	}
	// Nothing new: an awaitData getMore waits its maxAwaitTime, answers
	// an empty batch, and the cursor stays open.
	start := time.Now()
	if cur.TryNext(ctx) {
		t.Fatalf("no new document yet, got %v", cur.Current)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond || cur.ID() == 0 {
		t.Fatalf("awaitData getMore returned after %v, cursor %d", waited, cur.ID())
	}
	inserted := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 4}, {Key: "level", Value: "debug"}}, bson.D{{Key: "_id", Value: 5}, {Key: "level", Value: "info"}}})
		inserted <- err
	}()
	if !cur.Next(ctx) || cur.Current.Lookup("_id").Int32() != 5 {
		t.Fatalf("tailing: %v %v", cur.Current, cur.Err())
	}
	if err := <-inserted; err != nil {
		t.Fatal(err)
	}

	ce := cmdErr(t, db, bson.D{{Key: "find", Value: "log"}, {Key: "awaitData", Value: true}})
	if ce.Code != 9 || ce.Message != "Cannot set 'awaitData' without also setting 'tailable'" {
		t.Fatalf("awaitData alone: %v", ce)
	}
	insertDocs(t, db.Collection("plain"), bson.D{{Key: "_id", Value: 1}})
	ce = cmdErr(t, db, bson.D{{Key: "find", Value: "plain"}, {Key: "tailable", Value: true}})
	if ce.Code != 2 {
		t.Fatalf("tailable on a collection that is not capped: %v", ce)
	}
}
