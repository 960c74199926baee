package integration

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// TestHashedIndex: {a: "hashed"} as mongod shows and uses it — the
// listIndexes shape, an equality and an $in read through it (explain's
// IXSCAN with the hashes as bounds), the refusals of arrays and of a
// unique hashed index, and hint by key pattern.
func TestHashedIndex(t *testing.T) {
	db := newDB(t)
	c := db.Collection("h")
	reply := mustCreateIndex(t, db, "h", keySpec(bson.D{{Key: "a", Value: "hashed"}}))
	if field(t, reply, "numIndexesAfter") != int32(2) {
		t.Fatalf("createIndexes: %v", reply)
	}
	docs := make([]any, 0, 60)
	for i := 0; i < 60; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: fmt.Sprintf("v%d", i%6)}})
	}
	if _, err := c.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	checkHashedListIndexes(t, c)
	checkHashedExplain(t, db)
	n, err := c.CountDocuments(ctxT(t), bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{"v1", "v2", "nope"}}}}})
	if err != nil || n != 20 {
		t.Fatalf("count by $in: %d %v, want 20", n, err)
	}
	_, err = c.InsertOne(ctxT(t), bson.D{{Key: "a", Value: bson.A{1}}})
	var we mongo.WriteException
	if !errorAs(err, &we) || we.WriteErrors[0].Code != 16766 || we.WriteErrors[0].Message != "Error: hashed indexes do not currently support array values. Found array at path: a" {
		t.Fatalf("array insert: %v", err)
	}
	_, err = createIndex(t, db, "h2", keySpec(bson.D{{Key: "a", Value: "hashed"}}, bson.E{Key: "unique", Value: true}))
	wantCode(t, err, 16764, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
	cur, err := c.Find(ctxT(t), bson.D{{Key: "a", Value: "v3"}}, options.Find().SetHint(bson.D{{Key: "a", Value: "hashed"}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.D
	if err := cur.All(ctxT(t), &got); err != nil || len(got) != 10 {
		t.Fatalf("hinted find: %d documents, %v", len(got), err)
	}
}

func checkHashedListIndexes(t *testing.T, c *mongo.Collection) {
	t.Helper()
	cur, err := c.Indexes().List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.D
	if err := cur.All(ctxT(t), &specs); err != nil || len(specs) != 2 {
		t.Fatalf("listIndexes: %v %v", specs, err)
	}
	if got, want := bsonutil.Format(specs[1]), `{ v: 2, key: { a: "hashed" }, name: "a_hashed" }`; got != want {
		t.Fatalf("listIndexes shows %s, want %s", got, want)
	}
}

func checkHashedExplain(t *testing.T, db *mongo.Database) {
	t.Helper()
	reply := runCmd(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "h"}, {Key: "filter", Value: bson.D{{Key: "a", Value: "v4"}}}}}})
	winning := bsonutil.ToD(field(t, bsonutil.ToD(field(t, reply, "queryPlanner")), "winningPlan"))
	ixscan := bsonutil.ToD(field(t, winning, "inputStage"))
	h, err := shardkey.Hash("v4")
	if err != nil {
		t.Fatal(err)
	}
	bounds := fmt.Sprintf(`{ a: [ "[%d, %d]" ] }`, h, h)
	if field(t, winning, "stage") != "FETCH" || field(t, ixscan, "stage") != "IXSCAN" ||
		bsonutil.Format(field(t, ixscan, "keyPattern")) != `{ a: "hashed" }` || bsonutil.Format(field(t, ixscan, "indexBounds")) != bounds {
		t.Fatalf("explain's winning plan: %s, want FETCH over an IXSCAN of { a: \"hashed\" } bounded by %s", bsonutil.Format(winning), bounds)
	}
}
