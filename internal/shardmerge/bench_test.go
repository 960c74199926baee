package shardmerge

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

// BenchmarkMergeSorted merges three sorted shard streams of 10,000
// documents each on a two-key sort with ties in the first key; one op
// is the whole merge, and docs/s is reported beside it.
func BenchmarkMergeSorted(b *testing.B) {
	const perShard, nShards = 10_000, 3
	s, err := query.NewSort(bson.D{{Key: "k", Value: int32(1)}, {Key: "_id", Value: int32(1)}})
	if err != nil {
		b.Fatal(err)
	}
	shards := make([][]bson.D, nShards)
	for i := range perShard * nShards {
		shards[i%nShards] = append(shards[i%nShards], bson.D{{Key: "_id", Value: int64(i)}, {Key: "k", Value: int32(i / 7)}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(drainAll(b, MergeSorted(s, streamsOf(shards)))); n != perShard*nShards {
			b.Fatalf("merged %d documents", n)
		}
	}
	b.ReportMetric(float64(perShard*nShards*b.N)/b.Elapsed().Seconds(), "docs/s")
}
