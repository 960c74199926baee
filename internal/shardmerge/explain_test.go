package shardmerge

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

func TestReadStageName(t *testing.T) {
	cases := []struct {
		shards int
		sorted bool
		want   string
	}{
		{1, false, "SINGLE_SHARD"}, {1, true, "SINGLE_SHARD"},
		{2, false, "SHARD_MERGE"}, {3, true, "SHARD_MERGE_SORT"},
	}
	for _, tc := range cases {
		if got := ReadStageName(tc.shards, tc.sorted); got != tc.want {
			t.Errorf("%d shards, sorted %v: %s, want %s", tc.shards, tc.sorted, got, tc.want)
		}
	}
}

func shardReply(t *testing.T, returned, keys, docs int) bson.D {
	t.Helper()
	d := ejson(t, `{"explainVersion": "1",
		"queryPlanner": {"namespace": "db.c", "winningPlan": {"stage": "SHARDING_FILTER"}, "rejectedPlans": []},
		"executionStats": {"nReturned": 0, "executionTimeMillis": 2, "totalKeysExamined": 0, "totalDocsExamined": 0,
			"executionStages": {"stage": "LIMIT"}},
		"serverInfo": {"host": "h"}, "ok": 1}`)
	stats := d[2].Value.(bson.D)
	stats[0].Value, stats[2].Value, stats[3].Value = int32(returned), int32(keys), int32(docs)
	return d
}

// TestReadExplainShape pins the router's find explain: each shard's
// planner output under the router's stage, and execution totals that
// count what the router returned after its skip and limit.
func TestReadExplainShape(t *testing.T) {
	shards := []ShardExplain{
		{Shard: "shA", ConnectionString: "shA/h1:1", Reply: shardReply(t, 6, 10, 7)},
		{Shard: "shB", ConnectionString: "shB/h2:2", Reply: shardReply(t, 5, 4, 5)},
	}
	got := ReadExplain(StageShardMergeSort, shards, 9, 2, 8)
	want := ejson(t, `{
		"queryPlanner": {"mongosPlannerVersion": 1, "winningPlan": {"stage": "SHARD_MERGE_SORT", "shards": [
			{"explainVersion": "1", "shardName": "shA", "connectionString": "shA/h1:1", "serverInfo": {"host": "h"},
			 "namespace": "db.c", "winningPlan": {"stage": "SHARDING_FILTER"}, "rejectedPlans": []},
			{"explainVersion": "1", "shardName": "shB", "connectionString": "shB/h2:2", "serverInfo": {"host": "h"},
			 "namespace": "db.c", "winningPlan": {"stage": "SHARDING_FILTER"}, "rejectedPlans": []}]}},
		"executionStats": {"nReturned": 8, "executionTimeMillis": 9, "totalKeysExamined": 14, "totalDocsExamined": 12,
			"executionStages": {"stage": "SHARD_MERGE_SORT", "nReturned": 8, "limitAmount": 8, "skipAmount": 2,
				"executionTimeMillis": 9, "totalKeysExamined": 14, "totalDocsExamined": 12, "totalChildMillis": 4,
				"shards": [
					{"shardName": "shA", "nReturned": 6, "executionTimeMillis": 2, "totalKeysExamined": 10, "totalDocsExamined": 7, "executionStages": {"stage": "LIMIT"}},
					{"shardName": "shB", "nReturned": 5, "executionTimeMillis": 2, "totalKeysExamined": 4, "totalDocsExamined": 5, "executionStages": {"stage": "LIMIT"}}]}}}`)
	if !sameJSON(got, want) {
		t.Fatalf("explain\n%s\nwant\n%s", bsonutil.Format(got), bsonutil.Format(want))
	}
}

// TestReadExplainQueryPlannerOnly: shards that only planned give no
// executionStats.
func TestReadExplainQueryPlannerOnly(t *testing.T) {
	reply := ejson(t, `{"queryPlanner": {"winningPlan": {"stage": "COLLSCAN"}}, "serverInfo": {}}`)
	got := ReadExplain(StageSingleShard, []ShardExplain{{Shard: "s", ConnectionString: "s/h:1", Reply: reply}}, 0, 0, 0)
	if len(got) != 1 || got[0].Key != "queryPlanner" {
		t.Fatalf("explain %s", bsonutil.Format(got))
	}
}

// TestCountExplainCountsAfterSkipAndLimit: nCounted follows the router's
// skip and limit, as nReturned does.
func TestCountExplainCountsAfterSkipAndLimit(t *testing.T) {
	reply := func(n int32) bson.D {
		return bson.D{{Key: "queryPlanner", Value: bson.D{}}, {Key: "executionStats", Value: bson.D{
			{Key: "nReturned", Value: int32(0)},
			{Key: "executionStages", Value: bson.D{{Key: "stage", Value: "COUNT"}, {Key: "nCounted", Value: n}}}}}}
	}
	got := ReadExplain(StageShardMerge, []ShardExplain{{Shard: "a", Reply: reply(5)}, {Shard: "b", Reply: reply(24)}}, 1, 3, 0)
	stages, _ := bsonutil.LookupPath(got, "executionStats.executionStages")
	if n, _ := bsonutil.LookupPath(stages.(bson.D), "nCounted"); n != int64(26) {
		t.Fatalf("nCounted %v, want 26 (29 less the skip of 3)", n)
	}
}

// TestAggregateExplainShape pins the split aggregation's explain.
func TestAggregateExplainShape(t *testing.T) {
	split, err := SplitPipeline(stagesOf(t, `[{"$match": {"a": 1}}, {"$sort": {"b": -1}}, {"$limit": 3}]`))
	if err != nil {
		t.Fatal(err)
	}
	shard := ejson(t, `{"explainVersion": "1", "stages": [{"$cursor": {}}], "ok": 1, "operationTime": {"$timestamp": {"t": 1, "i": 1}}}`)
	got := AggregateExplain(split, []ShardExplain{{Shard: "shA", ConnectionString: "shA/h:1", Reply: shard}})
	want := ejson(t, `{"mergeType": "mongos", "splitPipeline": {
			"shardsPart": [{"$match": {"a": 1}}, {"$sort": {"b": -1}}, {"$limit": 3}],
			"mergerPart": [{"$mergeCursors": {"sort": {"b": -1}}}, {"$limit": 3}]},
		"shards": {"shA": {"host": "shA/h:1", "explainVersion": "1", "stages": [{"$cursor": {}}]}}}`)
	if !sameJSON(got, want) {
		t.Fatalf("explain\n%s\nwant\n%s", bsonutil.Format(got), bsonutil.Format(want))
	}
}
