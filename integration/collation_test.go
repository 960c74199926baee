package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var (
	caseInsensitive = &options.Collation{Locale: "en", Strength: 2}
	english         = &options.Collation{Locale: "en"}
)

func seedNames(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "ann"}, {Key: "v", Value: "10"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "Ann"}, {Key: "v", Value: "9"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "ANN"}, {Key: "v", Value: "100"}},
		bson.D{{Key: "_id", Value: 4}, {Key: "name", Value: "Bob"}, {Key: "v", Value: "2"}},
		bson.D{{Key: "_id", Value: 5}, {Key: "name", Value: "apple"}, {Key: "v", Value: "1"}},
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
}

func findIDs(t *testing.T, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder) []int32 {
	t.Helper()
	cur, err := coll.Find(ctxT(t), filter, opts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(ctxT(t), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

func TestCollationOnQueriesAndSorts(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("names")
	seedNames(t, coll)
	// An index in binary order must not answer a collated equality.
	mustCreateIndex(t, db, "names", keySpec(bson.D{{Key: "name", Value: 1}}))
	ann := bson.D{{Key: "name", Value: "ann"}}
	if got := findIDs(t, coll, ann, options.Find().SetCollation(caseInsensitive).SetSort(bson.D{{Key: "_id", Value: 1}})); len(got) != 3 {
		t.Fatalf("strength 2 find: %v, want 3 documents", got)
	}
	if got := findIDs(t, coll, ann, options.Find()); len(got) != 1 {
		t.Fatalf("simple find: %v", got)
	}
	byName := options.Find().SetSort(bson.D{{Key: "name", Value: 1}, {Key: "_id", Value: 1}})
	if got := findIDs(t, coll, bson.D{}, byName.SetCollation(english)); !equalIDs(got, []int32{1, 2, 3, 5, 4}) {
		t.Fatalf("en sort: %v", got)
	}
	if got := findIDs(t, coll, bson.D{}, options.Find().SetSort(bson.D{{Key: "name", Value: 1}})); !equalIDs(got, []int32{3, 2, 4, 1, 5}) {
		t.Fatalf("binary sort: %v", got)
	}
	numeric := options.Find().SetSort(bson.D{{Key: "v", Value: 1}}).SetCollation(&options.Collation{Locale: "en", NumericOrdering: true})
	if got := findIDs(t, coll, bson.D{}, numeric); !equalIDs(got, []int32{5, 4, 2, 1, 3}) {
		t.Fatalf("numericOrdering sort: %v", got)
	}
	gt := bson.D{{Key: "name", Value: bson.D{{Key: "$gt", Value: "b"}}}}
	if got := findIDs(t, coll, gt, options.Find().SetCollation(caseInsensitive)); !equalIDs(got, []int32{4}) {
		t.Fatalf("collated range: %v", got)
	}

	ctx := ctxT(t)
	if n, err := coll.CountDocuments(ctx, ann, options.Count().SetCollation(caseInsensitive)); err != nil || n != 3 {
		t.Fatalf("countDocuments: %d %v", n, err)
	}
	res := runCmd(t, db, bson.D{{Key: "count", Value: "names"}, {Key: "query", Value: ann},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}})
	if n := field(t, res, "n"); n != int32(3) {
		t.Fatalf("count: %v", n)
	}
	sorted := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "name", Value: bson.D{{Key: "$lt", Value: "b"}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "name", Value: -1}, {Key: "_id", Value: 1}}}}}
	cur, err := coll.Aggregate(ctx, sorted, options.Aggregate().SetCollation(english))
	if err != nil {
		t.Fatal(err)
	}
	var agg []bson.M
	if err := cur.All(ctx, &agg); err != nil || len(agg) != 4 || agg[0]["_id"] != int32(5) || agg[3]["_id"] != int32(1) {
		t.Fatalf("aggregate $match/$sort under en: %v %v", agg, err)
	}
	res = runCmd(t, db, bson.D{{Key: "distinct", Value: "names"}, {Key: "key", Value: "name"},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}})
	if vals := field(t, res, "values").(bson.A); len(vals) != 3 {
		t.Fatalf("distinct under strength 2: %v", vals)
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCollationOnWrites(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("names")
	seedNames(t, coll)
	ctx := ctxT(t)
	ann := bson.D{{Key: "name", Value: "ann"}}
	up, err := coll.UpdateMany(ctx, ann, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}}, options.UpdateMany().SetCollation(caseInsensitive))
	if err != nil || up.MatchedCount != 3 {
		t.Fatalf("updateMany: %+v %v", up, err)
	}
	var doc bson.M
	err = coll.FindOneAndUpdate(ctx, ann, bson.D{{Key: "$set", Value: bson.D{{Key: "first", Value: true}}}},
		options.FindOneAndUpdate().SetCollation(english).SetSort(bson.D{{Key: "name", Value: -1}})).Decode(&doc)
	if err != nil || doc["_id"] != int32(1) {
		t.Fatalf("findAndModify (strength 3 matches only 'ann'): %v %v", doc, err)
	}
	del, err := coll.DeleteMany(ctx, ann, options.DeleteMany().SetCollation(caseInsensitive))
	if err != nil || del.DeletedCount != 3 {
		t.Fatalf("deleteMany: %+v %v", del, err)
	}
	// An upsert under a collation stores the values as written.
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "name", Value: "Zed"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}},
		options.UpdateOne().SetUpsert(true).SetCollation(caseInsensitive))
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "name", Value: "Zed"}}).Decode(&doc); err != nil {
		t.Fatalf("upserted document: %v", err)
	}
}

func TestCollationErrorsAsMongod(t *testing.T) {
	db := newDB(t)
	seedNames(t, db.Collection("names"))
	for _, tc := range []struct {
		coll bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "locale", Value: "xx_nope!"}}, 2, `Field 'locale' is invalid in: { locale: "xx_nope!" }`},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}, 51024, "BSON field 'collation.strength' value must be >= 1 and <= 5, actual value '6'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: true}}, 40415, "BSON field 'collation.bogus' is an unknown field."},
	} {
		ce := cmdErr(t, db, bson.D{{Key: "find", Value: "names"}, {Key: "collation", Value: tc.coll}})
		if ce.Code != tc.code || ce.Message != tc.msg {
			t.Errorf("%v: %v", tc.coll, ce)
		}
	}
	// $expr compares under the collation too, reading the document as stored.
	expr := bson.D{{Key: "$expr", Value: bson.D{{Key: "$and", Value: bson.A{
		bson.D{{Key: "$eq", Value: bson.A{"$name", "ANN"}}},
		bson.D{{Key: "$eq", Value: bson.A{bson.D{{Key: "$substrCP", Value: bson.A{"$name", 0, 1}}}, "A"}}}}}}}}
	var docs []bson.M
	cur, err := db.Collection("names").Find(ctxT(t), expr, options.Find().SetCollation(caseInsensitive))
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctxT(t), &docs); err != nil || len(docs) != 3 {
		t.Fatalf("$expr under a collation: %v %v", docs, err)
	}
	if n, err := db.Collection("names").CountDocuments(ctxT(t), expr); err != nil || n != 1 {
		t.Fatalf("binary $expr: %d %v", n, err)
	}
}

// An index may carry a collation (listIndexes shows it in full); it answers
// queries of any collation correctly, as its keys stay in binary order.
func TestIndexWithCollation(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("names")
	seedNames(t, coll)
	spec := keySpec(bson.D{{Key: "name", Value: 1}}, bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}})
	mustCreateIndex(t, db, "names", spec)
	specs, err := coll.Indexes().ListSpecifications(ctxT(t))
	if err != nil || len(specs) != 2 {
		t.Fatalf("%v %v", specs, err)
	}
	raw, _ := coll.Indexes().List(ctxT(t))
	var all []bson.D
	if err := raw.All(ctxT(t), &all); err != nil {
		t.Fatal(err)
	}
	c, ok := field(t, all[1], "collation").(bson.D)
	if !ok || field(t, c, "locale") != "en" || field(t, c, "strength") != int32(2) || field(t, c, "caseFirst") != "off" {
		t.Fatalf("listIndexes collation: %v", all[1])
	}
	ann := bson.D{{Key: "name", Value: "ann"}}
	if got := findIDs(t, coll, ann, options.Find().SetCollation(caseInsensitive)); len(got) != 3 {
		t.Fatalf("collated query: %v", got)
	}
	if got := findIDs(t, coll, ann, options.Find()); len(got) != 1 {
		t.Fatalf("simple query: %v", got)
	}
	// Same key, another collation: another index.
	mustCreateIndex(t, db, "names", bson.D{{Key: "key", Value: bson.D{{Key: "name", Value: 1}}}, {Key: "name", Value: "name_fr"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}})
}
