package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestHostileCursorPlanMemory: a cursor whose query is an $in of 1 000 000
// values holds no more than it needs to go on.
func TestHostileCursorPlanMemory(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i)}}
	}
	if _, err := db.Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	in := make(bson.A, 1_000_000)
	for i := range in {
		in[i] = int32(i)
	}
	if _, err := db.Collection("c").Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// Before: 120 MiB on _id and 170 MiB on k, the whole plan (ids or key
	// ranges, explain bounds, predicates) kept by the open cursor; what
	// remains is mostly the filter's $in set, which the scan still needs.
	for _, path := range []string{"_id", "k"} {
		before := residentBytes(t)
		reply := runCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: path, Value: bson.D{{Key: "$in", Value: in}}}}}, {Key: "batchSize", Value: 10}})
		id := field(t, field(t, reply, "cursor").(bson.D), "id").(int64)
		held := residentBytes(t) - before
		t.Logf("$in of 1 000 000 on %s: the open cursor holds %d MiB", path, held>>20)
		if held > 100<<20 {
			t.Errorf("$in on %s: the open cursor holds %d MiB", path, held>>20)
		}
		rest, err := getMore(db, "c", id)
		if err != nil || nextBatchLen(t, rest) != 990 {
			t.Fatalf("$in on %s: getMore: %v, %v", path, rest, err)
		}
	}
}

// TestHostileAggregateCursorMemory: open aggregate cursors whose request
// is large (a $match with an $in of 200 000 values) hold their results and
// what getMore needs (the compiled $match, the scan's position and the
// index ranges not read yet), not the request.
func TestHostileAggregateCursorMemory(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i)}, {Key: "n", Value: int32(i)}}
	}
	if _, err := db.Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	in := make(bson.A, 200_000)
	for i := range in {
		in[i] = int32(i)
	}
	// Before: 400 MiB on n and 789 MiB on k (10 MiB a cursor: the
	// request's $in array, kept by the filters' documents, and the $in
	// compiled twice, for the scan and for the $match stage; on k also the
	// key ranges, 9.6 MiB, each key whole). Now about 156 and 242 MiB: the
	// $in compiled once (about 3.7 MiB for 200 000 values) and, on k, the
	// ranges not opened yet with their shared prefix kept once (about
	// 2.2 MiB).
	for _, c := range []struct {
		path  string
		bound int64
	}{{"n", 200 << 20}, {"k", 320 << 20}} {
		match := bson.D{{Key: "$match", Value: bson.D{{Key: c.path, Value: bson.D{{Key: "$in", Value: in}}}}}}
		cmd := bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{match}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}}
		before := residentBytes(t)
		ids := make([]int64, 40)
		for i := range ids {
			reply := runCmd(t, db, cmd)
			ids[i] = field(t, field(t, reply, "cursor").(bson.D), "id").(int64)
		}
		held := residentBytes(t) - before
		t.Logf("40 aggregate cursors, $in of 200 000 on %s: %d MiB held", c.path, held>>20)
		if held > c.bound {
			t.Errorf("$in on %s: 40 open cursors hold %d MiB, over %d MiB", c.path, held>>20, c.bound>>20)
		}
		for _, id := range ids {
			rest, err := getMore(db, "c", id)
			if err != nil || nextBatchLen(t, rest) != 99 {
				t.Fatalf("getMore: %v, %v", rest, err)
			}
		}
	}
}
