package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func aggregateAll(t *testing.T, c *mongo.Collection, pipeline any, opts ...options.Lister[options.AggregateOptions]) []bson.M {
	t.Helper()
	cur, err := c.Aggregate(ctxT(t), pipeline, opts...)
	if err != nil {
		t.Fatalf("%v: %v", pipeline, err)
	}
	var out []bson.M
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sumField(t *testing.T, c *mongo.Collection, f string) int32 {
	t.Helper()
	res := aggregateAll(t, c, bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$" + f}}}}}}})
	if len(res) == 0 {
		return 0
	}
	return res[0]["s"].(int32)
}

func TestAggregateOut(t *testing.T) {
	db := newDB(t)
	src := db.Collection("src")
	seedNumbers(t, src)
	dst := db.Collection("dst")
	insertDocs(t, dst, bson.D{{Key: "_id", Value: 99}, {Key: "n", Value: 1000}})
	mustCreateIndex(t, db, "dst", keySpec(bson.D{{Key: "n", Value: 1}}))
	out := aggregateAll(t, src, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 2}}}}}}, bson.D{{Key: "$out", Value: "dst"}}})
	if len(out) != 0 {
		t.Fatalf("$out returns no documents: %v", out)
	}
	if n, _ := dst.CountDocuments(ctxT(t), bson.D{}); n != 2 || sumField(t, dst, "n") != 5 {
		t.Fatalf("$out replaced the target with %d documents", n)
	}
	specs, _ := dst.Indexes().ListSpecifications(ctxT(t))
	if len(specs) != 2 {
		t.Fatalf("$out keeps the target's indexes: %v", specs)
	}
	// A failing $out leaves the target as it was.
	_, err := src.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 7}}}}, bson.D{{Key: "$out", Value: "dst"}}})
	wantCode(t, err, 11000, "dup key") // an $out of duplicate _ids fails as its insert does
	if n, _ := dst.CountDocuments(ctxT(t), bson.D{}); n != 2 {
		t.Fatalf("failed $out touched the target: %d", n)
	}
	// More documents than one insert group (64) all go in, and a duplicate
	// in a later group fails the whole $out.
	var many []any
	for i := range 200 {
		many = append(many, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 1}})
	}
	bulk := db.Collection("bulk")
	if _, err := bulk.InsertMany(ctxT(t), many); err != nil {
		t.Fatal(err)
	}
	outTo := func(stages ...any) error {
		_, err := bulk.Aggregate(ctxT(t), append(bson.A(stages), bson.D{{Key: "$out", Value: "copy"}}))
		return err
	}
	if err := outTo(); err != nil {
		t.Fatal(err)
	}
	if got := sumField(t, db.Collection("copy"), "n"); got != 200 {
		t.Fatalf("$out of 200 documents stored a sum of %d", got)
	}
	// From the 151st document on, every _id is 150.
	dup := bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$min", Value: bson.A{"$_id", 150}}}}}}}
	wantCode(t, outTo(bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}, dup), 11000, "dup key")
	if got := sumField(t, db.Collection("copy"), "n"); got != 200 {
		t.Fatalf("a failed $out left a sum of %d, want the 200 before it", got)
	}
	ce := cmdErr(t, db, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "x"}}, bson.D{{Key: "$match", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	if ce.Code != 40601 || ce.Message != "$out can only be the final stage in the pipeline" {
		t.Fatalf("$out not last: %v", ce)
	}
}

func TestAggregateMergeModes(t *testing.T) {
	db := newDB(t)
	src := db.Collection("src")
	seedNumbers(t, src) // _id 1..3, n 1..3
	dst := db.Collection("dst")
	reset := func() {
		_ = dst.Drop(ctxT(t))
		insertDocs(t, dst, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 100}, {Key: "keep", Value: true}})
	}
	merge := func(spec bson.D) error {
		_, err := src.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$merge", Value: spec}}})
		return err
	}
	into := bson.E{Key: "into", Value: "dst"}
	doc1 := func() bson.M {
		var m bson.M
		_ = dst.FindOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}).Decode(&m)
		return m
	}
	count := func() int64 { n, _ := dst.CountDocuments(ctxT(t), bson.D{}); return n }

	reset()
	if err := merge(bson.D{into}); err != nil || count() != 3 || doc1()["n"] != int32(1) || doc1()["keep"] != true {
		t.Fatalf("default (merge/insert): %v %d %v", err, count(), doc1())
	}
	reset()
	if err := merge(bson.D{into, {Key: "whenMatched", Value: "replace"}}); err != nil || doc1()["keep"] != nil || doc1()["n"] != int32(1) {
		t.Fatalf("replace: %v %v", err, doc1())
	}
	reset()
	if err := merge(bson.D{into, {Key: "whenMatched", Value: "keepExisting"}, {Key: "whenNotMatched", Value: "discard"}}); err != nil || count() != 1 || doc1()["n"] != int32(100) {
		t.Fatalf("keepExisting/discard: %v %d %v", err, count(), doc1())
	}
	reset()
	err := merge(bson.D{into, {Key: "whenMatched", Value: "fail"}})
	wantCode(t, err, 11000, "")
	reset()
	err = merge(bson.D{into, {Key: "whenMatched", Value: "keepExisting"}, {Key: "whenNotMatched", Value: "fail"}})
	wantCode(t, err, 13113, "$merge could not find a matching document")
	reset()
	pipe := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$add", Value: bson.A{"$n", "$$new.n"}}}}}}}}
	if err := merge(bson.D{into, {Key: "whenMatched", Value: pipe}, {Key: "whenNotMatched", Value: "discard"}}); err != nil || doc1()["n"] != int32(101) || count() != 1 {
		t.Fatalf("pipeline: %v %v", err, doc1())
	}
	err = merge(bson.D{into, {Key: "on", Value: "n"}})
	wantCode(t, err, 51183, "Cannot find index to verify that join fields will be unique")
}

func TestAggregateOneWithDocuments(t *testing.T) {
	db := newDB(t)
	res := runCmd(t, db, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "x", Value: 1}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: 1}}}},
	}}, {Key: "cursor", Value: bson.D{}}})
	batch := field(t, field(t, res, "cursor").(bson.D), "firstBatch").(bson.A)
	if len(batch) != 2 || field(t, batch[0].(bson.D), "x") != int32(1) {
		t.Fatalf("$documents: %v", res)
	}
}

// $out and $merge into a view are refused, and the view is left as it was.
func TestAggregateWriteIntoViewRefused(t *testing.T) {
	db := newDB(t)
	seedNumbers(t, db.Collection("src"))
	if err := db.CreateView(ctxT(t), "v", "src", bson.A{}); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []bson.D{{{Key: "$out", Value: "v"}}, {{Key: "$merge", Value: bson.D{{Key: "into", Value: "v"}}}}} {
		_, err := db.Collection("src").Aggregate(ctxT(t), bson.A{stage})
		wantCode(t, err, 166, "is a view, not a collection")
	}
	colls, _ := db.ListCollectionSpecifications(ctxT(t), bson.D{{Key: "name", Value: "v"}})
	if len(colls) != 1 || colls[0].Type != "view" {
		t.Fatalf("view after refused writes: %+v", colls)
	}
}

// TestDocumentsIntoCollection: a collectionless aggregate's $documents
// written with $out or $merge, as mongod 8.0 runs it, seeds a collection
// from the command alone.
func TestDocumentsIntoCollection(t *testing.T) {
	db := newDB(t)
	var docs bson.A
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 1}})
	}
	write := func(docs bson.A, stage bson.D) {
		t.Helper()
		cur, err := db.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$documents", Value: docs}}, stage})
		if err != nil {
			t.Fatalf("%s: %v", stage[0].Key, err)
		}
		if cur.Next(ctxT(t)) {
			t.Fatalf("%s returned %v", stage[0].Key, cur.Current)
		}
		_ = cur.Close(ctxT(t))
	}
	seeded := db.Collection("seeded")
	write(docs, bson.D{{Key: "$out", Value: "seeded"}})
	if got := sumField(t, seeded, "n"); got != 200 {
		t.Fatalf("$documents into $out stored a sum of %d, want 200", got)
	}
	write(bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 101}}, bson.D{{Key: "_id", Value: 500}, {Key: "n", Value: 1000}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "seeded"}}}})
	if got := sumField(t, seeded, "n"); got != 200+100+1000 {
		t.Fatalf("$documents into $merge left a sum of %d, want 1300", got)
	}
}

// TestMergeInGroups: $merge on _id writes its results in groups of 64;
// a result whose _id an earlier one of the same group holds meets that
// one's write, as one by one, and a failure keeps the writes before it.
func TestMergeInGroups(t *testing.T) {
	db := newDB(t)
	src := db.Collection("src")
	var docs []any
	for i := range 150 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}})
	}
	if _, err := src.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	// _ids 0..39 over and over: each group of 64 holds some twice.
	pipeline := bson.A{
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$mod", Value: bson.A{"$_id", 40}}}}, {Key: "seen", Value: 1}}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: bson.A{
			bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: "$$new.n"}, {Key: "seen", Value: bson.D{{Key: "$add", Value: bson.A{"$seen", 1}}}}}}},
		}}}}},
	}
	if _, err := src.Aggregate(ctxT(t), pipeline); err != nil {
		t.Fatal(err)
	}
	dst := db.Collection("dst")
	if n, _ := dst.CountDocuments(ctxT(t), bson.D{}); n != 40 {
		t.Fatalf("$merge made %d documents, want 40", n)
	}
	// Every result counted once; each _id ends with its last result's n.
	if got := sumField(t, dst, "seen"); got != 150 {
		t.Fatalf("seen sums to %d, want 150", got)
	}
	if got, want := sumField(t, dst, "n"), int32(30*29/2+30*120+(30+39)*10/2+10*80); got != want {
		t.Fatalf("n sums to %d, want %d", got, want)
	}
	// whenNotMatched: "fail" stops at the first result with no match
	// (_id 40), the 40 replacements before it kept.
	_, err := src.Aggregate(ctxT(t), bson.A{
		bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}, {Key: "whenMatched", Value: "replace"}, {Key: "whenNotMatched", Value: "fail"}}}},
	})
	wantCode(t, err, 13113, "")
	if got, want := sumField(t, dst, "n"), int32(39*40/2); got != want {
		t.Fatalf("after the failed $merge n sums to %d, want %d: the 40 replacements before it", got, want)
	}
}
