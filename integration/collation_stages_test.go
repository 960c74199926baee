package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Under a collation the aggregate stages that compare strings compare them
// as the collation orders them, as mongod does.
func TestCollationOnAggregateStages(t *testing.T) {
	db := newDB(t)
	names := db.Collection("names")
	seedNames(t, names)
	ci := options.Aggregate().SetCollation(caseInsensitive)
	// $group: ann, Ann and ANN are one group, shown by the first _id seen.
	groups := aggregateAll(t, names, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$name"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "spellings", Value: bson.D{{Key: "$addToSet", Value: "$name"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}, ci)
	if len(groups) != 3 || groups[0]["_id"] != "ann" || groups[0]["n"] != int32(3) ||
		len(groups[0]["spellings"].(bson.A)) != 1 || groups[1]["_id"] != "apple" || groups[2]["_id"] != "Bob" {
		t.Fatalf("$group under a collation: %v", groups)
	}
	// Expressions compare under the collation; the strings they build do not change.
	proj := aggregateAll(t, names, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: 2}}}},
		{{Key: "$project", Value: bson.D{{Key: "isAnn", Value: bson.D{{Key: "$eq", Value: bson.A{"$name", "ANN"}}}},
			{Key: "in", Value: bson.D{{Key: "$in", Value: bson.A{"BOB", bson.A{"bob"}}}}},
			{Key: "upper", Value: bson.D{{Key: "$toUpper", Value: "$name"}}}}}},
	}, ci)
	if len(proj) != 1 || proj[0]["isAnn"] != true || proj[0]["in"] != true || proj[0]["upper"] != "ANN" {
		t.Fatalf("$project under a collation: %v", proj)
	}
	// Without the collation the same expression compares bytes.
	if got := aggregateAll(t, names, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "_id", Value: 2}}}},
		{{Key: "$project", Value: bson.D{{Key: "isAnn", Value: bson.D{{Key: "$eq", Value: bson.A{"$name", "ANN"}}}}}}}}); got[0]["isAnn"] != false {
		t.Fatalf("binary $eq: %v", got)
	}
	// $sortByCount groups under the collation.
	byCount := aggregateAll(t, names, mongo.Pipeline{{{Key: "$sortByCount", Value: "$name"}}}, ci)
	if len(byCount) != 3 || byCount[0]["count"] != int32(3) {
		t.Fatalf("$sortByCount: %v", byCount)
	}
	// $lookup's equality follows the collation.
	if _, err := db.Collection("people").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}, {Key: "who", Value: "BOB"}}); err != nil {
		t.Fatal(err)
	}
	joined := aggregateAll(t, db.Collection("people"), mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "names"}, {Key: "localField", Value: "who"}, {Key: "foreignField", Value: "name"}, {Key: "as", Value: "m"}}}},
	}, ci)
	if len(joined) != 1 || len(joined[0]["m"].(bson.A)) != 1 {
		t.Fatalf("$lookup under a collation: %v", joined)
	}
	// $bucket's string boundaries compare under the collation.
	buckets := aggregateAll(t, names, mongo.Pipeline{
		{{Key: "$bucket", Value: bson.D{{Key: "groupBy", Value: "$name"}, {Key: "boundaries", Value: bson.A{"a", "b", "c"}}}}},
	}, ci)
	if len(buckets) != 2 || buckets[0]["count"] != int32(4) || buckets[1]["count"] != int32(1) {
		t.Fatalf("$bucket under a collation: %v", buckets)
	}
}

// A collection's default collation applies to every command that gives
// none; listCollections and listIndexes show it.
func TestCollectionDefaultCollation(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	if err := db.CreateCollection(ctx, "names", options.CreateCollection().SetCollation(caseInsensitive)); err != nil {
		t.Fatal(err)
	}
	names := db.Collection("names")
	seedNames(t, names)
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "names"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections %v %v", specs, err)
	}
	var opts struct {
		Collation struct {
			Locale   string `bson:"locale"`
			Strength int32  `bson:"strength"`
			Version  string `bson:"version"`
		} `bson:"collation"`
	}
	if err := bson.Unmarshal(specs[0].Options, &opts); err != nil || opts.Collation.Locale != "en" || opts.Collation.Strength != 2 || opts.Collation.Version == "" {
		t.Fatalf("options %v %v", specs[0].Options, err)
	}
	ann := bson.D{{Key: "name", Value: "ann"}}
	if got := findIDs(t, names, ann, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})); !equalIDs(got, []int32{1, 2, 3}) {
		t.Fatalf("find under the default collation: %v", got)
	}
	if got := findIDs(t, names, ann, options.Find().SetCollation(&options.Collation{Locale: "simple"})); !equalIDs(got, []int32{1}) {
		t.Fatalf("find with the simple collation: %v", got)
	}
	if n, err := names.CountDocuments(ctx, ann); err != nil || n != 3 {
		t.Fatalf("countDocuments %d %v", n, err)
	}
	if res, err := names.UpdateMany(ctx, ann, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}}); err != nil || res.ModifiedCount != 3 {
		t.Fatalf("updateMany %v %v", res, err)
	}
	groups := aggregateAll(t, names, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$name"}}}}})
	if len(groups) != 3 {
		t.Fatalf("$group under the default collation: %v", groups)
	}
	var apple bson.M
	if err := names.FindOneAndUpdate(ctx, bson.D{{Key: "name", Value: "APPLE"}}, bson.D{{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: "Red"}}}}).Decode(&apple); err != nil || apple["_id"] != int32(5) {
		t.Fatalf("findAndModify under the default collation: %v %v", apple, err)
	}
	vals, err := names.Distinct(ctx, "name", bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if arr, _ := vals.Values(); len(arr) != 3 {
		t.Fatalf("distinct under the default collation: %v", vals)
	}
	if res, err := names.DeleteOne(ctx, bson.D{{Key: "name", Value: "BOB"}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteOne %v %v", res, err)
	}
	// An index without a collation takes the collection's.
	if _, err := names.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := names.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ixs []bson.D
	if err := cur.All(ctx, &ixs); err != nil || len(ixs) != 2 {
		t.Fatalf("listIndexes %v %v", ixs, err)
	}
	for _, ix := range ixs {
		if c, ok := field(t, ix, "collation").(bson.D); !ok || field(t, c, "locale") != "en" || field(t, c, "strength") != int32(2) {
			t.Fatalf("index without the collection's collation: %v", ix)
		}
	}
	// Its _id index stays binary: a string _id is refused, never a silent duplicate.
	_, err = names.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}})
	if we, ok := err.(mongo.WriteException); !ok || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("string _id in a collated collection: %v", err)
	}
}

// A view has its own default collation; a read through it may repeat it
// but not change it.
func TestViewDefaultCollation(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	seedNames(t, db.Collection("names"))
	if err := db.CreateView(ctx, "v", "names", mongo.Pipeline{}, options.CreateView().SetCollation(caseInsensitive)); err != nil {
		t.Fatal(err)
	}
	v := db.Collection("v")
	if got := findIDs(t, v, bson.D{{Key: "name", Value: "ann"}}, options.Find()); len(got) != 3 {
		t.Fatalf("find through the view: %v", got)
	}
	if n, err := v.CountDocuments(ctx, bson.D{{Key: "name", Value: "ANN"}}); err != nil || n != 3 {
		t.Fatalf("count through the view: %d %v", n, err)
	}
	ce := cmdErr(t, db, bson.D{{Key: "find", Value: "v"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}})
	if ce.Code != 167 || ce.Message != "Cannot override a view's default collation" {
		t.Fatalf("another collation on the view: %v", ce)
	}
	ce = cmdErr(t, db, bson.D{{Key: "create", Value: "v2"}, {Key: "viewOn", Value: "v"}, {Key: "pipeline", Value: bson.A{}}})
	if ce.Code != 167 {
		t.Fatalf("view on a view with another collation: %v", ce)
	}
	// A view without a collation compares in binary order even over a
	// collection with a default collation.
	if err := db.CreateCollection(ctx, "ci", options.CreateCollection().SetCollation(caseInsensitive)); err != nil {
		t.Fatal(err)
	}
	seedNames(t, db.Collection("ci"))
	if err := db.CreateView(ctx, "plain", "ci", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	if got := findIDs(t, db.Collection("plain"), bson.D{{Key: "name", Value: "ann"}}, options.Find()); len(got) != 1 {
		t.Fatalf("find through a view without a collation: %v", got)
	}
}
