package shardmerge

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// countOn is one server's count: matches, less skip, at most |limit|.
func countOn(t testing.TB, cmd bson.D, docs []bson.D) int64 {
	t.Helper()
	var filter bson.D
	if v, ok := bsonutil.Field(cmd, "query"); ok {
		filter = v.(bson.D)
	}
	f, err := query.NewFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, d := range docs {
		if f.Match(d) {
			n++
		}
	}
	// One server: skip first, then at most |limit| (the test's commands
	// hold int64 values).
	if skip, ok := bsonutil.Field(cmd, "skip"); ok {
		n = max(n-skip.(int64), 0)
	}
	if limit, ok := bsonutil.Field(cmd, "limit"); ok {
		n = min(n, max(limit.(int64), -limit.(int64)))
	}
	return n
}

// TestCountMatchesOneServer: every combination of skip and limit (limit
// negative too) counted per shard with the shard command and merged
// equals one server's count over the union.
func TestCountMatchesOneServer(t *testing.T) {
	ran := 0
	for _, skip := range []int64{0, 1, 7, 500} {
		for _, limit := range []int64{0, 1, 5, -5, 40} {
			cmd := bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: int32(1)}}}}}}
			if skip != 0 {
				cmd = append(cmd, bson.E{Key: "skip", Value: skip})
			}
			if limit != 0 {
				cmd = append(cmd, bson.E{Key: "limit", Value: limit})
			}
			shardCmd, err := ShardCountCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if _, hasSkip := bsonutil.Field(shardCmd, "skip"); hasSkip {
				t.Fatalf("shard command %v keeps skip", shardCmd)
			}
			for seed := range seedsPerCase {
				r := rand.New(rand.NewPCG(uint64(skip), uint64(seed)))
				shards, union := deal(r, randomDocs(r))
				counts := make([]ShardCount, len(shards))
				for i, docs := range shards {
					counts[i] = ShardCount{Shard: fmt.Sprint("shard", i), N: countOn(t, shardCmd, docs)}
				}
				if got, want := MergeCount(cmd, counts), countOn(t, cmd, union); got != want {
					t.Fatalf("skip %d limit %d seed %d: %d, want %d (shard command %v, counts %v)", skip, limit, seed, got, want, shardCmd, counts)
				}
				ran++
			}
		}
	}
	t.Logf("%d count cases compared", ran)
}

func TestShardCountCommandOverflowIsMongodsError(t *testing.T) {
	cmd := bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: int64(9223372036854775807)}, {Key: "skip", Value: int64(1)}}
	_, err := ShardCountCommand(cmd)
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.Overflow {
		t.Fatalf("error %v, want Overflow", err)
	}
}

func TestCountReplyNamesEachShard(t *testing.T) {
	got := CountReply(7, []ShardCount{{"shA", 3}, {"shB", 9}})
	want := bson.D{{Key: "n", Value: int64(7)}, {Key: "shards", Value: bson.D{{Key: "shA", Value: int64(3)}, {Key: "shB", Value: int64(9)}}}, {Key: "ok", Value: 1.0}}
	if !closeValues(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

// distinctOn is one server's distinct: the values of path, arrays
// unwound one level, de-duplicated, ascending.
func distinctOn(docs []bson.D, path string, coll query.Collator) bson.A {
	var values bson.A
	for _, d := range docs {
		v, ok := bsonutil.Field(d, path)
		if !ok {
			continue
		}
		if arr, isArr := v.(bson.A); isArr {
			values = append(values, arr...)
			continue
		}
		values = append(values, v)
	}
	return MergeDistinct([]bson.A{values}, coll)
}

// TestDistinctMatchesOneServer: the union of the shards' distinct values
// is the distinct of the union, with and without a collation; numbers
// equal across types count once.
func TestDistinctMatchesOneServer(t *testing.T) {
	ran := 0
	for _, path := range []string{"g", "v", "s", "tags", "a"} {
		for _, withCollation := range []bool{false, true} {
			var coll query.Collator
			if withCollation {
				coll = caseInsensitive(t)
			}
			for seed := range seedsPerCase {
				r := rand.New(rand.NewPCG(uint64(len(path)), uint64(seed)))
				shards, union := deal(r, randomDocs(r))
				perShard := make([]bson.A, len(shards))
				for i, docs := range shards {
					perShard[i] = distinctOn(docs, path, coll)
				}
				want := distinctOn(union, path, coll)
				if got := MergeDistinct(perShard, coll); !closeValues(got, want) {
					t.Fatalf("%s collation %v seed %d: %v, want %v", path, withCollation, seed, got, want)
				}
				ran++
			}
		}
	}
	t.Logf("%d distinct cases compared", ran)
}

func TestMergeDistinctKeepsOneOfEqualValuesInOrder(t *testing.T) {
	got := MergeDistinct([]bson.A{{int32(2), "b", nil}, {2.0, int64(1), "a", "B"}}, nil)
	want := bson.A{nil, int64(1), int32(2), "B", "a", "b"}
	if !closeValues(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	folded := MergeDistinct([]bson.A{{"b"}, {"B", "a"}}, caseInsensitive(t))
	if !closeValues(folded, bson.A{"a", "b"}) {
		t.Fatalf("under a case-insensitive collation: %v, want [a b]", folded)
	}
}
