package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MongoDB 5.0+ stores $-prefixed and dotted field names; _id may not be
// an operator document.
func TestDollarAndDottedFieldNames(t *testing.T) {
	db := newDB(t)
	c := db.Collection("f")
	doc := bson.D{{Key: "_id", Value: 1}, {Key: "$price", Value: 5}, {Key: "a.b", Value: 2}, {Key: "n", Value: bson.D{{Key: "$x", Value: 1}}}}
	if _, err := c.InsertOne(ctxT(t), doc); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got bson.D
	if err := c.FindOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || len(got) != 4 || got[1].Key != "$price" || got[2].Key != "a.b" {
		t.Fatalf("stored %v %v", got, err)
	}
	// A replacement may hold them too (sent raw: drivers check replacements).
	runCmd(t, db, bson.D{{Key: "update", Value: "f"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.D{{Key: "b.c", Value: 1}, {Key: "n", Value: bson.D{{Key: "$y", Value: 2}}}}},
	}}}})
	if err := c.FindOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || len(got) != 3 || got[1].Key != "b.c" {
		t.Fatalf("replaced %v %v", got, err)
	}
	_, err := c.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 1}}}})
	wantWriteCode(t, err, 52)
	_, err = c.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 7}, {Key: "_id", Value: 8}})
	wantWriteCode(t, err, 2)
	if n, _ := c.CountDocuments(ctxT(t), bson.D{}); n != 1 {
		t.Fatalf("%d documents", n)
	}
}
