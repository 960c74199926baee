package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// TestStorageSizesNeverZeroWithData: dbStats, collStats and $collStats
// report storageSize, totalSize and each index's size from the storage
// engine's estimate, and none is 0 for a collection holding documents,
// whether the data sits in memory, in the engine's memtable, or flushed
// to files on disk.
func TestStorageSizesNeverZeroWithData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   app.Config
		flush bool
	}{
		{"memory", app.Config{}, false},
		{"disk before flush", app.Config{DataDir: t.TempDir()}, false},
		{"disk after flush", app.Config{DataDir: t.TempDir()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := connect(t, startServer(t, tc.cfg)).Database("sizes")
			docs := bson.A{}
			for i := range 200 {
				docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: strings.Repeat("x", 100)}})
			}
			runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
			runCmd(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{
				{Key: "key", Value: bson.D{{Key: "name", Value: 1}}}, {Key: "name", Value: "name_1"}}}}})
			if tc.flush {
				runCmd(t, db.Client().Database("admin"), bson.D{{Key: "fsync", Value: 1}})
			}
			checkSizes(t, "collStats", runCmd(t, db, bson.D{{Key: "collStats", Value: "c"}}), "storageSize", "totalIndexSize", "totalSize")
			checkSizes(t, "dbStats", runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}}), "storageSize", "indexSize", "totalSize")
			agg := runCmd(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
				bson.D{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}}}, {Key: "cursor", Value: bson.D{}}})
			_, batch := cursorReply(t, agg, "firstBatch")
			if len(batch) != 1 {
				t.Fatalf("$collStats: %v", agg)
			}
			first, _ := batch[0].(bson.D)
			stats, _ := lookupField(first, "storageStats").(bson.D)
			checkSizes(t, "$collStats", stats, "storageSize", "totalIndexSize", "totalSize")
		})
	}
}

// checkSizes: storage and index sizes above 0, the total their sum, and
// for collStats every index sized.
func checkSizes(t *testing.T, source string, reply bson.D, storageKey, indexKey, totalKey string) {
	t.Helper()
	storage, index, total := bsonutil.ToFloat(lookupField(reply, storageKey)), bsonutil.ToFloat(lookupField(reply, indexKey)), bsonutil.ToFloat(lookupField(reply, totalKey))
	if storage <= 0 || index <= 0 || total != storage+index {
		t.Fatalf("%s: %s %v, %s %v, %s %v", source, storageKey, storage, indexKey, index, totalKey, total)
	}
	sizes, ok := lookupField(reply, "indexSizes").(bson.D)
	if !ok {
		return // dbStats has no per-index sizes
	}
	if len(sizes) != 2 {
		t.Fatalf("%s: indexSizes %v, want _id_ and name_1", source, sizes)
	}
	for _, e := range sizes {
		if bsonutil.ToFloat(e.Value) <= 0 {
			t.Fatalf("%s: index %s sized %v", source, e.Key, e.Value)
		}
	}
}
