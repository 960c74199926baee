package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestReplicaSetGroupedStatements: an update or delete command's
// statements that each name one document by _id commit in groups on a
// replica set, and answer as they would one by one: a repeated _id sees
// the statement before it, a statement of another shape runs alone in its
// place, upserts report their index, a failing statement fails alone
// (unordered) or stops the command (ordered), and a retry, on the same
// primary or the next, answers the first attempt without writing again.
func TestReplicaSetGroupedStatements(t *testing.T) {
	rs := startReplSet(t, 3)
	primary := rs.waitPrimary(-1, 10*time.Second)
	coll := rs.direct(primary).Database("test").Collection("g")
	var seed []any
	for i := range 300 {
		seed = append(seed, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}})
	}
	if _, err := coll.InsertMany(ctxT(t), seed); err != nil {
		t.Fatal(err)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("group-statements")}}}
	cmd := groupedUpdate(lsid)
	first := rawCall(t, rs.addrs[primary], cmd)
	checkGroupedUpdate(t, "first attempt", first)
	want := map[int]int{0: 1000, 140: 1141, 149: 1149, 150: 150, 151: 151, 205: 205, 1152: 152, 1199: 199}
	checkN(t, coll, want)
	if n := count(t, coll, bson.D{{Key: "late", Value: true}}); n != 9 {
		t.Fatalf("%d documents set by the statements after the failure, want 9", n)
	}
	again := rawCall(t, rs.addrs[primary], cmd)
	checkGroupedUpdate(t, "retry", again)
	if ids, _ := lookupD(again, "retriedStmtIds"); ids == nil {
		t.Fatalf("retry without retriedStmtIds: %v", again)
	}
	checkN(t, coll, want)
	rs.waitSameHash("test", 10*time.Second)

	rs.kill9(primary)
	next := rs.waitPrimary(primary, 10*time.Second)
	checkGroupedUpdate(t, "retry on the new primary", rawCall(t, rs.addrs[next], cmd))
	ncoll := rs.direct(next).Database("test").Collection("g")
	checkN(t, ncoll, want)

	// Ordered: the failing statement stops the command, its group's
	// statements before it done.
	var ordered bson.A
	for i := 10; i < 30; i++ {
		inc := any(1)
		if i == 20 {
			inc = "x"
		}
		ordered = append(ordered, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: i}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: inc}}}}}})
	}
	r := rawCall(t, rs.addrs[next], bson.D{{Key: "update", Value: "g"}, {Key: "updates", Value: ordered}, {Key: "$db", Value: "test"}})
	if field(t, r, "n") != int32(10) || writeErrorIndexes(t, r) != "[10]" {
		t.Fatalf("ordered update with a failure at 10: %v", r)
	}
	checkN(t, ncoll, map[int]int{19: 1020, 20: 1020, 21: 1021})

	// Deletes: a group, a repeated _id, a statement by another field.
	var dels bson.A
	for i := range 100 {
		dels = append(dels, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: i}}}, {Key: "limit", Value: 1}})
	}
	dels = append(dels, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 3}}}, {Key: "limit", Value: 1}},
		bson.D{{Key: "q", Value: bson.D{{Key: "n", Value: 250}}}, {Key: "limit", Value: 1}})
	r = rawCall(t, rs.addrs[next], bson.D{{Key: "delete", Value: "g"}, {Key: "deletes", Value: dels},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(2)}, {Key: "$db", Value: "test"}})
	if field(t, r, "n") != int32(101) {
		t.Fatalf("delete of 100 by _id, one again and one by n: %v", r)
	}
	if n := count(t, ncoll, bson.D{}); n != 348-101 {
		t.Fatalf("%d documents left, want %d", n, 348-101)
	}
	rs.waitSameHash("test", 10*time.Second)

	// The bulkWrite command's runs of updates and of deletes by _id, retried.
	var ops bson.A
	for k := range 50 {
		ops = append(ops, bson.D{{Key: "update", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 200 + k}}},
			{Key: "updateMods", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}})
	}
	for k := range 10 {
		ops = append(ops, bson.D{{Key: "delete", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 270 + k}}}})
	}
	bulk := bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.g"}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(3)}, {Key: "$db", Value: "admin"}}
	for try := range 2 {
		r := rawCall(t, rs.addrs[next], bulk)
		if codeOf(r) != 0 || field(t, r, "nErrors") != int32(0) || field(t, r, "nMatched") != int32(50) ||
			field(t, r, "nModified") != int32(50) || field(t, r, "nDeleted") != int32(10) {
			t.Fatalf("bulkWrite try %d: errors %v, matched %v, modified %v, deleted %v", try, field(t, r, "nErrors"),
				field(t, r, "nMatched"), field(t, r, "nModified"), field(t, r, "nDeleted"))
		}
	}
	checkN(t, ncoll, map[int]int{200: 201, 249: 250})
	if n := count(t, ncoll, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 270}, {Key: "$lt", Value: 280}}}}); n != 0 {
		t.Fatalf("%d of the bulkWrite's deleted documents left", n)
	}

	// A driver's bulkWrite of updateOne, replaceOne and deleteOne by _id.
	// The driver sends one command for each run of one kind.
	models := []mongo.WriteModel{}
	for i := 100; i < 200; i++ {
		if i%3 == 0 {
			models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: i}}).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "bulk", Value: i}}}}))
		}
	}
	for i := 100; i < 200; i++ {
		if i%3 == 1 {
			models = append(models, mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: i}}).SetReplacement(bson.D{{Key: "bulk", Value: i}}))
		}
	}
	for i := 100; i < 200; i++ {
		if i%3 == 2 {
			models = append(models, mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: i}}))
		}
	}
	res, err := rs.client().Database("test").Collection("g").BulkWrite(ctxT(t), models, options.BulkWrite().SetOrdered(true))
	if err != nil || res.MatchedCount != 67 || res.ModifiedCount != 67 || res.DeletedCount != 33 {
		t.Fatalf("bulkWrite: %+v (%v)", res, err)
	}
	if n := count(t, ncoll, bson.D{{Key: "bulk", Value: bson.D{{Key: "$exists", Value: true}}}}); n != 67 {
		t.Fatalf("%d documents carry the bulkWrite's field, want 67", n)
	}
	rs.waitSameHash("test", 10*time.Second)
}

// groupedUpdate is an unordered retryable update of 211 statements:
// 0–149 $inc by _id, 150 the _id of 140 again, 151 by another field, 152–199
// upserts of new _ids, 200 a $inc that fails, 201–209 $set by _id, 210 a
// $set that changes nothing.
func groupedUpdate(lsid bson.D) bson.D {
	var stmts bson.A
	stmt := func(q, u bson.D) bson.D { return bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}} }
	inc := func(n any) bson.D { return bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: n}}}} }
	for i := range 150 {
		stmts = append(stmts, stmt(bson.D{{Key: "_id", Value: i}}, inc(1000)))
	}
	stmts = append(stmts, stmt(bson.D{{Key: "_id", Value: 140}}, inc(1)), // 140's run of 64 statements
		stmt(bson.D{{Key: "n", Value: 151}}, bson.D{{Key: "$set", Value: bson.D{{Key: "by", Value: "scan"}}}}))
	for j := 152; j < 200; j++ {
		stmts = append(stmts, append(stmt(bson.D{{Key: "_id", Value: 1000 + j}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: j}}}}), bson.E{Key: "upsert", Value: true}))
	}
	stmts = append(stmts, stmt(bson.D{{Key: "_id", Value: 7}}, inc("x")))
	for j := 201; j < 210; j++ {
		stmts = append(stmts, stmt(bson.D{{Key: "_id", Value: j}}, bson.D{{Key: "$set", Value: bson.D{{Key: "late", Value: true}}}}))
	}
	// Matched, changed nothing: no record, so a retry runs it again and
	// still counts it unmodified.
	stmts = append(stmts, stmt(bson.D{{Key: "_id", Value: 210}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 210}}}}))
	return bson.D{{Key: "update", Value: "g"}, {Key: "updates", Value: stmts}, {Key: "ordered", Value: false},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "test"}}
}

func checkGroupedUpdate(t *testing.T, what string, r bson.D) {
	t.Helper()
	if codeOf(r) != 0 || field(t, r, "n") != int32(210) || field(t, r, "nModified") != int32(161) {
		t.Fatalf("%s: code %d, n %v, nModified %v; want 210 and 161", what, codeOf(r), field(t, r, "n"), field(t, r, "nModified"))
	}
	up, _ := field(t, r, "upserted").(bson.A)
	if len(up) != 48 {
		t.Fatalf("%s: %d upserted, want 48: %v", what, len(up), r)
	}
	for k, u := range up {
		d := u.(bson.D)
		if field(t, d, "index") != int32(152+k) || fmt.Sprint(field(t, d, "_id")) != fmt.Sprint(1152+k) {
			t.Fatalf("%s: upserted[%d] = %v", what, k, d)
		}
	}
	if got := writeErrorIndexes(t, r); got != "[200]" {
		t.Fatalf("%s: write errors at %s, want [200]: %v", what, got, r)
	}
}

// writeErrorIndexes lists the indexes of a write reply's writeErrors.
func writeErrorIndexes(t *testing.T, r bson.D) string {
	t.Helper()
	errs, _ := lookupD(r, "writeErrors")
	var idx []any
	for _, e := range errs.(bson.A) {
		idx = append(idx, field(t, e.(bson.D), "index"))
	}
	return fmt.Sprint(idx)
}

// checkN checks the n of the documents of want, by _id.
func checkN(t *testing.T, coll *mongo.Collection, want map[int]int) {
	t.Helper()
	for id, n := range want {
		var doc struct{ N int }
		if err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil || doc.N != n {
			t.Fatalf("document %d: n %d (%v), want %d", id, doc.N, err, n)
		}
	}
}

func count(t *testing.T, coll *mongo.Collection, filter bson.D) int64 {
	t.Helper()
	n, err := coll.CountDocuments(ctxT(t), filter)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
