package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestViewsReadAndRefuseWrites(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	src := db.Collection("src")
	var docs []any
	for i := 1; i <= 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}, {Key: "even", Value: i%2 == 0}})
	}
	if _, err := src.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateView(ctx, "evens", "src", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "even", Value: true}}}}}); err != nil {
		t.Fatal(err)
	}
	// A view on a view.
	if err := db.CreateView(ctx, "bigEvens", "evens", bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 4}}}}}}}); err != nil {
		t.Fatal(err)
	}
	v := db.Collection("evens")
	opts := options.Find().SetSort(bson.D{{Key: "n", Value: -1}}).SetSkip(1).SetLimit(3).SetProjection(bson.D{{Key: "even", Value: 0}}).SetBatchSize(2)
	cur, err := v.Find(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 10}}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatalf("find through a view (with getMore): %v", err)
	}
	if len(got) != 3 || got[0]["n"] != int32(6) || got[2]["n"] != int32(2) || got[0]["even"] != nil {
		t.Fatalf("find on view: %v", got)
	}
	if n, err := v.CountDocuments(ctx, bson.D{}); err != nil || n != 5 {
		t.Fatalf("countDocuments: %d %v", n, err)
	}
	res := runCmd(t, db, bson.D{{Key: "count", Value: "bigEvens"}})
	if field(t, res, "n") != int32(3) {
		t.Fatalf("count on a view of a view: %v", res)
	}
	vals, err := db.Collection("bigEvens").Distinct(ctx, "n", bson.D{}).Raw()
	if err != nil || len(mustValues(t, vals)) != 3 {
		t.Fatalf("distinct: %v %v", vals, err)
	}
	colls, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "evens"}})
	if err != nil || len(colls) != 1 || colls[0].Type != "view" || !colls[0].ReadOnly {
		t.Fatalf("listCollections: %+v %v", colls, err)
	}

	_, err = v.InsertOne(ctx, bson.D{{Key: "n", Value: 1}})
	wantCode(t, err, 166, "Namespace test.evens is a view, not a collection")
	_, err = v.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantCode(t, err, 166, "")
	_, err = v.DeleteMany(ctx, bson.D{})
	wantCode(t, err, 166, "")
	err = v.FindOneAndDelete(ctx, bson.D{}).Err()
	wantCode(t, err, 166, "")
	ce := cmdErr(t, db, bson.D{{Key: "createIndexes", Value: "evens"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}}}}})
	if ce.Code != 166 {
		t.Fatalf("createIndexes on a view: %v", ce)
	}
	if err := v.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := src.CountDocuments(ctx, bson.D{}); n != 10 {
		t.Fatalf("dropping a view touched its source: %d", n)
	}
}

func mustValues(t *testing.T, raw bson.RawArray) []bson.RawValue {
	t.Helper()
	vals, err := raw.Values()
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// Options a read through a view cannot honour are refused, not dropped.
func TestViewReadOptionsRefused(t *testing.T) {
	db := newDB(t)
	insertDocs(t, db.Collection("src"), bson.D{{Key: "_id", Value: 1}})
	if err := db.CreateView(ctxT(t), "v", "src", bson.A{}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "v"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}}}},
		{{Key: "find", Value: "v"}, {Key: "tailable", Value: true}},
		{{Key: "count", Value: "v"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
	} {
		if ce := cmdErr(t, db, cmd); ce.Code != 167 {
			t.Fatalf("%v: %v", cmd, ce)
		}
	}
}
