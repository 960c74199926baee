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
