package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// exprEq is {$expr: {$eq: ["$field", "$$variable"]}}.
func exprEq(field, variable string) bson.D {
	return bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$" + field, "$$" + variable}}}}}
}

func seedNumbers(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}, {Key: "tag", Value: "a"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 2}, {Key: "tag", Value: "a"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 3}, {Key: "tag", Value: "a"}},
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
}

func TestLetOnFindUpdateDeleteFindAndModify(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("let")
	seedNumbers(t, coll)
	ctx := ctxT(t)
	let := bson.D{{Key: "target", Value: bson.D{{Key: "$add", Value: bson.A{1, 1}}}}}

	cur, err := coll.Find(ctx, exprEq("n", "target"), options.Find().SetLet(let))
	if err != nil {
		t.Fatal(err)
	}
	var found []bson.M
	if err := cur.All(ctx, &found); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0]["_id"] != int32(2) {
		t.Fatalf("find with let: %v", found)
	}

	up, err := coll.UpdateOne(ctx, exprEq("n", "target"),
		bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: "$$target"}}}}},
		options.UpdateOne().SetLet(let))
	if err != nil || up.MatchedCount != 1 || up.ModifiedCount != 1 {
		t.Fatalf("updateOne with let: %+v %v", up, err)
	}
	var two bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&two); err != nil || two["seen"] != int32(2) {
		t.Fatalf("pipeline update read $$target: %v %v", two, err)
	}

	many, err := coll.UpdateMany(ctx, bson.D{{Key: "$expr", Value: bson.D{{Key: "$gte", Value: bson.A{"$n", "$$low"}}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "big", Value: true}}}},
		options.UpdateMany().SetLet(bson.D{{Key: "low", Value: 2}}))
	if err != nil || many.MatchedCount != 2 {
		t.Fatalf("updateMany with let: %+v %v", many, err)
	}

	var fam bson.M
	err = coll.FindOneAndUpdate(ctx, exprEq("n", "target"), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}},
		options.FindOneAndUpdate().SetLet(let).SetReturnDocument(options.After)).Decode(&fam)
	if err != nil || fam["_id"] != int32(2) || fam["n"] != int32(12) {
		t.Fatalf("findAndModify with let: %v %v", fam, err)
	}

	del, err := coll.DeleteOne(ctx, exprEq("n", "target"), options.DeleteOne().SetLet(bson.D{{Key: "target", Value: 3}}))
	if err != nil || del.DeletedCount != 1 {
		t.Fatalf("deleteOne with let: %+v %v", del, err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("after delete: %d documents, want 2", n)
	}
}

// A variable nobody defined is MongoDB's 17276, even on an empty
// collection: no silent empty result.
func TestUndefinedVariableIs17276(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	empty := db.Collection("empty")
	_, err := empty.Find(ctx, exprEq("n", "nope"))
	wantCode(t, err, 17276, "Use of undefined variable: nope")

	coll := db.Collection("c")
	seedNumbers(t, coll)
	_, err = coll.UpdateOne(ctx, exprEq("n", "nope"), bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantWriteCode(t, err, 17276)
	_, err = coll.DeleteMany(ctx, exprEq("n", "nope"))
	wantWriteCode(t, err, 17276)
	err = coll.FindOneAndDelete(ctx, exprEq("n", "nope")).Err()
	wantCode(t, err, 17276, "nope")
	// Variables bound inside the expression are defined.
	inner := bson.D{{Key: "$expr", Value: bson.D{{Key: "$let", Value: bson.D{
		{Key: "vars", Value: bson.D{{Key: "two", Value: 2}}},
		{Key: "in", Value: bson.D{{Key: "$eq", Value: bson.A{"$n", "$$two"}}}},
	}}}}}
	if n, err := coll.CountDocuments(ctx, inner); err != nil || n != 1 {
		t.Fatalf("$let-bound variable: %d %v", n, err)
	}
}

// mongod 8.0's count and distinct take no let.
func TestLetRefusedByCountAndDistinct(t *testing.T) {
	db := newDB(t)
	seedNumbers(t, db.Collection("c"))
	for _, cmd := range []bson.D{
		{{Key: "count", Value: "c"}, {Key: "let", Value: bson.D{{Key: "x", Value: 1}}}},
		{{Key: "distinct", Value: "c"}, {Key: "key", Value: "n"}, {Key: "let", Value: bson.D{{Key: "x", Value: 1}}}},
	} {
		ce := cmdErr(t, db, cmd)
		if ce.Code != 40415 || ce.Message != "BSON field '"+cmd[0].Key+".let' is an unknown field." {
			t.Fatalf("%v: %v", cmd, ce)
		}
	}
}

func wantWriteCode(t *testing.T, err error, code int) {
	t.Helper()
	var we mongo.WriteException
	if !errorAs(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != code {
		t.Fatalf("want write error %d, got %v", code, err)
	}
}

func TestUpdateOneAndReplaceOneHonourSort(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("s")
	seedNumbers(t, coll)
	ctx := ctxT(t)
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "tag", Value: "a"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "top", Value: true}}}},
		options.UpdateOne().SetSort(bson.D{{Key: "n", Value: -1}}))
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("updateOne with sort: %+v %v", res, err)
	}
	var top bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "top", Value: true}}).Decode(&top); err != nil || top["_id"] != int32(3) {
		t.Fatalf("sort {n: -1} must update _id 3, got %v %v", top, err)
	}
	rep, err := coll.ReplaceOne(ctx, bson.D{{Key: "tag", Value: "a"}}, bson.D{{Key: "tag", Value: "b"}, {Key: "n", Value: 0}},
		options.Replace().SetSort(bson.D{{Key: "n", Value: 1}}))
	if err != nil || rep.ModifiedCount != 1 {
		t.Fatalf("replaceOne with sort: %+v %v", rep, err)
	}
	var b bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "tag", Value: "b"}}).Decode(&b); err != nil || b["_id"] != int32(1) {
		t.Fatalf("sort {n: 1} must replace _id 1, got %v %v", b, err)
	}
	ce := cmdErr(t, db, bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}},
		{Key: "multi", Value: true}, {Key: "sort", Value: bson.D{{Key: "n", Value: 1}}},
	}}}})
	if ce.Code != 9 || ce.Message != "Cannot specify sort with multi=true" {
		t.Fatalf("sort with multi: %v", ce)
	}
}

// An aggregate that reads an undefined variable fails when parsed, even
// over an empty collection.
func TestAggregateUndefinedVariable(t *testing.T) {
	db := newDB(t)
	for _, stage := range []bson.D{
		{{Key: "$match", Value: exprEq("n", "nope")}},
		{{Key: "$project", Value: bson.D{{Key: "x", Value: "$$nope"}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$$nope"}}}},
	} {
		_, err := db.Collection("empty").Aggregate(ctxT(t), bson.A{stage})
		wantCode(t, err, 17276, "Use of undefined variable: nope")
	}
	cur, err := db.Collection("empty").Aggregate(ctxT(t), bson.A{bson.D{{Key: "$match", Value: exprEq("n", "x")}}},
		options.Aggregate().SetLet(bson.D{{Key: "x", Value: 1}}))
	if err != nil {
		t.Fatalf("defined by let: %v", err)
	}
	_ = cur.Close(ctxT(t))
}

// explain of an updateOne with a sort shows the SORT and judges the
// document the sort picks.
func TestExplainSortedUpdate(t *testing.T) {
	db := newDB(t)
	seedNumbers(t, db.Collection("c"))
	ex := runCmd(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 3}}}}},
		{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}},
	}}}}}, {Key: "verbosity", Value: "executionStats"}})
	if got := planStages(t, ex); got != "UPDATE>SORT>COLLSCAN" {
		t.Fatalf("stages %s", got)
	}
	upd := stageNamed(t, field(t, execStats(t, ex), "executionStages").(bson.D), "UPDATE")
	// The sort picks n: 3, which $set to 3 leaves unchanged.
	if field(t, upd, "nMatched") != int32(1) || field(t, upd, "nWouldModify") != int32(0) {
		t.Fatalf("UPDATE %v", upd)
	}
}
