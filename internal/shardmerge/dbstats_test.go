package shardmerge

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// MergeDBStats adds up every count and size the shards give, weighs the
// average object size by each shard's objects, and keeps each reply.
func TestMergeDBStats(t *testing.T) {
	shard := func(objects int32, avg, data float64) bson.D {
		return bson.D{{Key: "collections", Value: int32(2)}, {Key: "views", Value: int32(0)}, {Key: "objects", Value: objects},
			{Key: "avgObjSize", Value: avg}, {Key: "dataSize", Value: data}, {Key: "storageSize", Value: 4096.0},
			{Key: "indexes", Value: int32(3)}, {Key: "indexSize", Value: 8192.0}, {Key: "totalSize", Value: 12288.0},
			{Key: "scaleFactor", Value: 1.0}}
	}
	out := MergeDBStats("db", []string{"a/h:1", "b/h:2"}, []bson.D{shard(10, 100, 1000), shard(30, 200, 6000)})
	want := map[string]any{"collections": int64(4), "views": int64(0), "objects": int64(40), "indexes": int64(6),
		"avgObjSize": 175.0, "dataSize": 7000.0, "storageSize": 8192.0, "indexSize": 16384.0, "totalSize": 24576.0,
		"fsUsedSize": 0.0, "scaleFactor": 1.0, "db": "db"}
	for f, w := range want {
		if got, _ := bsonutil.Field(out, f); got != w {
			t.Errorf("%s: %v (%T), want %v (%T)", f, got, got, w, w)
		}
	}
	raw, _ := bsonutil.Field(out, "raw")
	if d := bsonutil.ToD(raw); len(d) != 2 || d[0].Key != "a/h:1" || d[1].Key != "b/h:2" {
		t.Errorf("raw: %v", raw)
	}
}
