package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Updates and deletes whose filter an index answers exactly take their
// _ids from the index entries alone. An expired document that comes first
// in the index must not take the match from a live one, and multikey
// entries must not count a document twice.
func TestIndexAnsweredWritesSkipExpiredCandidates(t *testing.T) {
	db := newDB(t)
	c := db.Collection("sessions")
	ctx := ctxT(t)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}},
	}}})
	// The monitor sleeps for an hour: the expired document stays stored,
	// first among the index entries for "x", and must be skipped.
	runCmd(t, db.Client().Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: false}})
	defer runCmd(t, db.Client().Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: true}})
	createTTL(t, db, "sessions", "t", 60)
	now := time.Now()
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "x"}, {Key: "t", Value: now.Add(-time.Hour)}},
		bson.D{{Key: "_id", Value: 2}, {Key: "token", Value: "x"}, {Key: "t", Value: now}},
		bson.D{{Key: "_id", Value: 3}, {Key: "token", Value: bson.A{"y", "y", "z"}}, {Key: "t", Value: now}},
		bson.D{{Key: "_id", Value: 4}, {Key: "token", Value: "y"}, {Key: "t", Value: now}},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := c.UpdateOne(ctx, bson.D{{Key: "token", Value: "x"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}})
	if err != nil || r.MatchedCount != 1 || r.ModifiedCount != 1 {
		t.Fatalf("updateOne: %+v %v", r, err)
	}
	var got bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "v", Value: 1}}).Decode(&got); err != nil || got["_id"] != int32(2) {
		t.Fatalf("the live document 2 is the one updated: %v %v", got, err)
	}
	r, err = c.UpdateMany(ctx, bson.D{{Key: "token", Value: "y"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || r.MatchedCount != 2 || r.ModifiedCount != 2 {
		t.Fatalf("updateMany over a multikey entry: %+v %v", r, err)
	}
	if n, err := c.CountDocuments(ctx, bson.D{{Key: "n", Value: 1}}); err != nil || n != 2 {
		t.Fatalf("each document incremented once: %d %v", n, err)
	}
	d, err := c.DeleteOne(ctx, bson.D{{Key: "token", Value: "x"}})
	if err != nil || d.DeletedCount != 1 {
		t.Fatalf("deleteOne: %+v %v", d, err)
	}
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("the live document is the one deleted: %v", err)
	}
	d, err = c.DeleteOne(ctx, bson.D{{Key: "token", Value: "x"}})
	if err != nil || d.DeletedCount != 0 {
		t.Fatalf("only the expired document is left for x, and it is not deleted by a client: %+v %v", d, err)
	}
	ur, err := c.UpdateOne(ctx, bson.D{{Key: "token", Value: "x"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "t", Value: now}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || ur.MatchedCount != 0 || ur.UpsertedCount != 1 {
		t.Fatalf("an upsert that meets only an expired document inserts: %+v %v", ur, err)
	}
	if n := storedCount(t, c); n != 4 {
		t.Fatalf("stored documents %d, want 4 (1 expired, 3, 4 and the upserted one)", n)
	}
}
