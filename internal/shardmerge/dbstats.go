package shardmerge

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// dbStatsCounts and dbStatsSizes are the dbStats fields a router adds
// up over the shards, as mongos does (counts as integers, sizes as
// doubles, in the request's scale).
var (
	dbStatsCounts = []string{"collections", "views", "objects", "indexes"}
	dbStatsSizes  = []string{"dataSize", "storageSize", "indexSize", "totalSize", "fsUsedSize", "fsTotalSize"}
)

// MergeDBStats is dbStats over the shards, as mongos answers it: each
// shard's reply under raw, by the shard's connection string (hosts[i]
// for replies[i]), then the sums of their counts and sizes, the average
// object size over all their objects, and the scale.
func MergeDBStats(db string, hosts []string, replies []bson.D) bson.D {
	raw := make(bson.D, len(replies))
	counts := make([]int64, len(dbStatsCounts))
	sizes := make([]float64, len(dbStatsSizes))
	var objectBytes float64 // unscaled: avgObjSize is in bytes whatever the scale
	for i, reply := range replies {
		raw[i] = bson.E{Key: hosts[i], Value: reply}
		for j, f := range dbStatsCounts {
			counts[j] += int64(number(reply, f))
		}
		for j, f := range dbStatsSizes {
			sizes[j] += number(reply, f)
		}
		objectBytes += number(reply, "avgObjSize") * number(reply, "objects")
	}
	out := bson.D{{Key: "raw", Value: raw}, {Key: "db", Value: db}}
	for j, f := range dbStatsCounts {
		out = append(out, bson.E{Key: f, Value: counts[j]})
	}
	avg := 0.0
	if objects := counts[2]; objects > 0 {
		avg = objectBytes / float64(objects)
	}
	out = append(out, bson.E{Key: "avgObjSize", Value: avg})
	for j, f := range dbStatsSizes {
		out = append(out, bson.E{Key: f, Value: sizes[j]})
	}
	scale := 1.0
	if len(replies) > 0 {
		scale = number(replies[0], "scaleFactor")
	}
	return append(out, bson.E{Key: "scaleFactor", Value: scale})
}

// number is a numeric field of d as a float64; 0 when absent or not a
// number.
func number(d bson.D, field string) float64 {
	v, _ := bsonutil.Field(d, field)
	if !bsonutil.IsNumber(v) {
		return 0
	}
	return bsonutil.ToFloat(v)
}
