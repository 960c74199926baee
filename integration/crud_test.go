package integration

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestInsertFindSortProject(t *testing.T) {
	db := newDB(t)
	c := db.Collection("people")
	ctx := ctxT(t)
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "ann"}, {Key: "age", Value: 31}, {Key: "tags", Value: bson.A{"a", "b"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "bob"}, {Key: "age", Value: 25}},
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "cy"}, {Key: "age", Value: 40}, {Key: "tags", Value: bson.A{"b"}}},
	}
	res, err := c.InsertMany(ctx, docs)
	if err != nil || len(res.InsertedIDs) != 3 {
		t.Fatalf("insertMany: %v %v", res, err)
	}
	cur, err := c.Find(ctx, bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: 30}}}},
		options.Find().SetSort(bson.D{{Key: "age", Value: -1}}).SetProjection(bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 0}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.D
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	want := []bson.D{{{Key: "name", Value: "cy"}}, {{Key: "name", Value: "ann"}}}
	if !equalDocs(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	n, err := c.CountDocuments(ctx, bson.D{{Key: "tags", Value: "b"}})
	if err != nil || n != 2 {
		t.Fatalf("countDocuments tags=b: %d %v", n, err)
	}
	est, err := c.EstimatedDocumentCount(ctx)
	if err != nil || est != 3 {
		t.Fatalf("estimatedDocumentCount: %d %v", est, err)
	}
}

func TestGeneratedIDAndDuplicateKey(t *testing.T) {
	db := newDB(t)
	c := db.Collection("c")
	ctx := ctxT(t)
	r, err := c.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.InsertedID.(bson.ObjectID); !ok {
		t.Fatalf("generated _id is %T", r.InsertedID)
	}
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 7}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("want a write exception, got %v", err)
	}
	e := we.WriteErrors[0]
	if e.Code != 11000 || e.Message != "E11000 duplicate key error collection: test.c index: _id_ dup key: { _id: 7 }" {
		t.Fatalf("dup key error: %d %q", e.Code, e.Message)
	}
}

func TestOrderedAndUnorderedWriteErrors(t *testing.T) {
	db := newDB(t)
	c := db.Collection("c")
	ctx := ctxT(t)
	docs := []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}
	_, err := c.InsertMany(ctx, docs)
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 {
		t.Fatalf("ordered: %v", err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("ordered insert stops at the error: %d documents", n)
	}
	_, err = c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "_id", Value: 1}}}, options.InsertMany().SetOrdered(false))
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[1].Index != 2 {
		t.Fatalf("unordered: %v", err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("unordered insert continues: %d documents", n)
	}
}

func TestUpdateOperatorsAndUpsert(t *testing.T) {
	db := newDB(t)
	c := db.Collection("carts")
	ctx := ctxT(t)
	_, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "cartID", Value: 100}, {Key: "products", Value: bson.A{"soap"}}, {Key: "n", Value: 1}},
		bson.D{{Key: "cartID", Value: 101}, {Key: "products", Value: bson.A{"milk"}}, {Key: "n", Value: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.UpdateOne(ctx, bson.D{{Key: "cartID", Value: 101}}, bson.D{
		{Key: "$push", Value: bson.D{{Key: "products", Value: "banana"}}},
		{Key: "$inc", Value: bson.D{{Key: "n", Value: 2}}},
	})
	if err != nil || r.MatchedCount != 1 || r.ModifiedCount != 1 {
		t.Fatalf("updateOne: %+v %v", r, err)
	}
	var doc bson.M
	if err := c.FindOne(ctx, bson.D{{Key: "cartID", Value: 101}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["n"] != int32(3) || len(doc["products"].(bson.A)) != 2 {
		t.Fatalf("after update: %v", doc)
	}
	r, err = c.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 3}}}})
	if err != nil || r.MatchedCount != 2 || r.ModifiedCount != 1 {
		t.Fatalf("updateMany counts matched and modified apart: %+v %v", r, err)
	}
	r, err = c.UpdateOne(ctx, bson.D{{Key: "cartID", Value: 102}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 9}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || r.UpsertedCount != 1 || r.UpsertedID == nil {
		t.Fatalf("upsert: %+v %v", r, err)
	}
	if err := c.FindOne(ctx, bson.D{{Key: "cartID", Value: 102}}).Decode(&doc); err != nil || doc["n"] != int32(9) {
		t.Fatalf("upserted doc: %v %v", doc, err)
	}
	_, err = c.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$bogus", Value: bson.D{{Key: "a", Value: 1}}}})
	wantCode(t, err, 9, "Unknown modifier: $bogus")
}

func TestReplaceAndDelete(t *testing.T) {
	db := newDB(t)
	c := db.Collection("c")
	ctx := ctxT(t)
	for i := 0; i < 5; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 2}}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "z", Value: true}})
	if err != nil || r.ModifiedCount != 1 {
		t.Fatalf("replace: %+v %v", r, err)
	}
	var got bson.D
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: 0}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !equalDocs([]bson.D{got}, []bson.D{{{Key: "_id", Value: int32(0)}, {Key: "z", Value: true}}}) {
		t.Fatalf("replaced doc: %v", got)
	}
	d, err := c.DeleteOne(ctx, bson.D{{Key: "k", Value: 1}})
	if err != nil || d.DeletedCount != 1 {
		t.Fatalf("deleteOne: %+v %v", d, err)
	}
	d, err = c.DeleteMany(ctx, bson.D{{Key: "k", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil || d.DeletedCount != 3 {
		t.Fatalf("deleteMany: %+v %v", d, err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("left: %d", n)
	}
}

func TestFindAndModify(t *testing.T) {
	db := newDB(t)
	c := db.Collection("q")
	ctx := ctxT(t)
	for i := 1; i <= 3; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i * 10}}); err != nil {
			t.Fatal(err)
		}
	}
	var got bson.M
	err := c.FindOneAndUpdate(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "taken", Value: true}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "p", Value: -1}}).SetReturnDocument(options.After)).Decode(&got)
	if err != nil || got["_id"] != int32(3) || got["taken"] != true {
		t.Fatalf("findOneAndUpdate: %v %v", got, err)
	}
	err = c.FindOneAndDelete(ctx, bson.D{{Key: "p", Value: 10}}).Decode(&got)
	if err != nil || got["_id"] != int32(1) {
		t.Fatalf("findOneAndDelete: %v %v", got, err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 99}}, bson.D{{Key: "$set", Value: bson.D{{Key: "p", Value: 1}}}}).Decode(&got)
	if !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("no match: %v", err)
	}
	err = c.FindOneAndReplace(ctx, bson.D{{Key: "_id", Value: 50}}, bson.D{{Key: "p", Value: 5}},
		options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.After)).Decode(&got)
	if err != nil || got["_id"] != int32(50) || got["p"] != int32(5) {
		t.Fatalf("upsert replace: %v %v", got, err)
	}
}

func TestDistinctAndAggregate(t *testing.T) {
	db := newDB(t)
	c := db.Collection("ev")
	ctx := ctxT(t)
	for i := 0; i < 10; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "page", Value: i % 3}, {Key: "ms", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	vals, err := c.Distinct(ctx, "page", bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var arr bson.A
	if err := bson.UnmarshalValue(bson.TypeArray, vals, &arr); err != nil {
		t.Fatal(err)
	}
	if len(arr) != 3 {
		t.Fatalf("distinct: %v", arr)
	}
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$page"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$ms"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0]["total"] != int32(0+3+6+9) {
		t.Fatalf("aggregate: %v", got)
	}
}

func TestCursorBatchesAndGetMore(t *testing.T) {
	db := newDB(t)
	c := db.Collection("many")
	ctx := ctxT(t)
	docs := make([]any, 250)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	reply := runCmd(t, db, bson.D{{Key: "find", Value: "many"}})
	cur := field(t, reply, "cursor").(bson.D)
	first := field(t, cur, "firstBatch").(bson.A)
	id := field(t, cur, "id").(int64)
	if len(first) != 101 || id == 0 {
		t.Fatalf("first batch: %d docs, id %d", len(first), id)
	}
	more := runCmd(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "many"}})
	next := field(t, field(t, more, "cursor").(bson.D), "nextBatch").(bson.A)
	if len(next) != 149 || field(t, field(t, more, "cursor").(bson.D), "id").(int64) != 0 {
		t.Fatalf("getMore returned %d docs", len(next))
	}
	ce := cmdErr(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "many"}})
	if ce.Code != 43 {
		t.Fatalf("exhausted cursor: %v", ce)
	}
	reply = runCmd(t, db, bson.D{{Key: "find", Value: "many"}, {Key: "batchSize", Value: 10}})
	id = field(t, field(t, reply, "cursor").(bson.D), "id").(int64)
	killed := runCmd(t, db, bson.D{{Key: "killCursors", Value: "many"}, {Key: "cursors", Value: bson.A{id, int64(12345)}}})
	if len(field(t, killed, "cursorsKilled").(bson.A)) != 1 || len(field(t, killed, "cursorsNotFound").(bson.A)) != 1 {
		t.Fatalf("killCursors: %v", killed)
	}
	var all []bson.D
	fc, err := c.Find(ctx, bson.D{}, options.Find().SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.All(ctx, &all); err != nil || len(all) != 250 {
		t.Fatalf("driver iteration over getMore: %d %v", len(all), err)
	}
}

func equalDocs(a, b []bson.D) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, _ := bson.Marshal(a[i])
		y, _ := bson.Marshal(b[i])
		if string(x) != string(y) {
			return false
		}
	}
	return true
}
