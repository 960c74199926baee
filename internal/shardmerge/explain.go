package shardmerge

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// The router's explain stages, as mongod's cluster explain names them.
const (
	StageSingleShard    = "SINGLE_SHARD"
	StageShardMerge     = "SHARD_MERGE"
	StageShardMergeSort = "SHARD_MERGE_SORT"
)

// ReadStageName is the router's stage for a find or count explained over
// nShards shards: one shard is SINGLE_SHARD, several merge-sort when the
// command sorts and merge otherwise.
func ReadStageName(nShards int, sorted bool) string {
	switch {
	case nShards == 1:
		return StageSingleShard
	case sorted:
		return StageShardMergeSort
	}
	return StageShardMerge
}

// ShardExplain is one shard's answer to the explain the router sent.
type ShardExplain struct {
	Shard            string // its id in config.shards
	ConnectionString string // "setName/host:port,..."
	Reply            bson.D
}

// ReadExplain is the body of the router's explain of a find or count
// (without ok): queryPlanner with the router's stage over each shard's
// plan, then, when the shards ran the plan, executionStats summed over
// the shards. skip and limit (0: none) are what the router applied: with
// several shards the totals count what the router returned.
func ReadExplain(stage string, shards []ShardExplain, millis, skip, limit int64) bson.D {
	out := bson.D{{Key: "queryPlanner", Value: bson.D{
		{Key: "mongosPlannerVersion", Value: int32(1)},
		{Key: "winningPlan", Value: bson.D{{Key: "stage", Value: stage}, {Key: "shards", Value: plannerShards(shards)}}},
	}}}
	if len(shards) > 0 && hasValue(shards[0].Reply, "executionStats") {
		out = append(out, bson.E{Key: "executionStats", Value: execStats(stage, shards, millis, skip, limit)})
	}
	return out
}

func plannerShards(shards []ShardExplain) bson.A {
	out := bson.A{}
	for _, s := range shards {
		d := bson.D{}
		if v, ok := bsonutil.Field(s.Reply, "explainVersion"); ok {
			d = append(d, bson.E{Key: "explainVersion", Value: v})
		}
		d = append(d, bson.E{Key: "shardName", Value: s.Shard}, bson.E{Key: "connectionString", Value: s.ConnectionString})
		if v, ok := bsonutil.Field(s.Reply, "serverInfo"); ok {
			d = append(d, bson.E{Key: "serverInfo", Value: v})
		}
		planner, _ := bsonutil.Field(s.Reply, "queryPlanner")
		d = append(d, bsonutil.ToD(planner)...)
		out = append(out, d)
	}
	return out
}

// execStats sums the shards' executionStats as mongod's router does.
func execStats(stage string, shards []ShardExplain, millis, skip, limit int64) bson.D {
	var returned, keys, docs, childMillis, counted int64
	anyCounted := false
	perShard := bson.A{}
	for _, s := range shards {
		stats := bsonutil.ToD(valueOf(s.Reply, "executionStats"))
		returned += longField(stats, "nReturned")
		keys += longField(stats, "totalKeysExamined")
		docs += longField(stats, "totalDocsExamined")
		childMillis += longField(stats, "executionTimeMillis")
		if stages := bsonutil.ToD(valueOf(stats, "executionStages")); hasValue(stages, "nCounted") {
			counted += longField(stages, "nCounted")
			anyCounted = true
		}
		perShard = append(perShard, append(bson.D{{Key: "shardName", Value: s.Shard}}, stats...))
	}
	several := len(shards) > 1
	if several {
		returned, counted = max(returned-skip, 0), max(counted-skip, 0)
		if limit > 0 {
			returned, counted = min(returned, limit), min(counted, limit)
		}
	}
	stages := bson.D{{Key: "stage", Value: stage}, {Key: "nReturned", Value: returned}}
	if anyCounted {
		stages = append(stages, bson.E{Key: "nCounted", Value: counted})
	}
	if several && limit > 0 {
		stages = append(stages, bson.E{Key: "limitAmount", Value: limit})
	}
	if several && skip > 0 {
		stages = append(stages, bson.E{Key: "skipAmount", Value: skip})
	}
	stages = append(stages,
		bson.E{Key: "executionTimeMillis", Value: millis}, bson.E{Key: "totalKeysExamined", Value: keys},
		bson.E{Key: "totalDocsExamined", Value: docs}, bson.E{Key: "totalChildMillis", Value: childMillis},
		bson.E{Key: "shards", Value: perShard})
	return bson.D{
		{Key: "nReturned", Value: returned}, {Key: "executionTimeMillis", Value: millis},
		{Key: "totalKeysExamined", Value: keys}, {Key: "totalDocsExamined", Value: docs},
		{Key: "executionStages", Value: stages},
	}
}

// AggregateExplain is the body of the router's explain of a split
// aggregation (without ok), in mongod's shape: where it merged, the two
// halves of the pipeline, and each shard's own explain by shard id.
func AggregateExplain(split *PipelineSplit, shards []ShardExplain) bson.D {
	perShard := bson.D{}
	for _, s := range shards {
		d := bson.D{{Key: "host", Value: s.ConnectionString}}
		for _, e := range s.Reply {
			if e.Key != "ok" && e.Key != "$clusterTime" && e.Key != "operationTime" {
				d = append(d, e)
			}
		}
		perShard = append(perShard, bson.E{Key: s.Shard, Value: d})
	}
	return bson.D{
		{Key: "mergeType", Value: "mongos"},
		{Key: "splitPipeline", Value: bson.D{
			{Key: "shardsPart", Value: stagesArray(split.ShardPipeline)},
			{Key: "mergerPart", Value: stagesArray(mergerPart(split))},
		}},
		{Key: "shards", Value: perShard},
	}
}

// mergerPart shows the router's merge as mongod does: a $mergeCursors
// stage first, with the sort it merges by.
func mergerPart(split *PipelineSplit) []bson.D {
	merge := bson.D{}
	if len(split.MergeSort) > 0 {
		merge = append(merge, bson.E{Key: "sort", Value: split.MergeSort})
	}
	return append([]bson.D{{{Key: "$mergeCursors", Value: merge}}}, split.MergePipeline...)
}

func stagesArray(stages []bson.D) bson.A {
	out := make(bson.A, 0, len(stages))
	for _, s := range stages {
		out = append(out, s)
	}
	return out
}

func longField(d bson.D, name string) int64 {
	v, ok := bsonutil.Field(d, name)
	if !ok || !bsonutil.IsNumber(v) {
		return 0
	}
	return int64(bsonutil.ToFloat(v))
}

// valueOf is a top-level field's value, nil when absent.
func valueOf(d bson.D, name string) any {
	v, _ := bsonutil.Field(d, name)
	return v
}

func hasValue(d bson.D, name string) bool {
	_, ok := bsonutil.Field(d, name)
	return ok
}
