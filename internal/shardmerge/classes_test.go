package shardmerge

import (
	"maps"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// TestEveryStageHasAPlacement holds a row for every stage internal/aggregate
// parses: where it runs, and for a sample of it the exact shard and
// router pipelines. A stage added to aggregate without a row here fails.
func TestEveryStageHasAPlacement(t *testing.T) {
	rows := map[string]struct {
		placement        Placement
		stage            string // the sample, after a {$match: {k: 1}}
		shards, router   string
		mergeSortDefined bool
	}{
		"$match":       {OnShards, `{"$match": {"a": 1}}`, `[{"$match": {"k": 1}}, {"$match": {"a": 1}}]`, `[]`, false},
		"$project":     {OnShards, `{"$project": {"a": 1}}`, `[{"$match": {"k": 1}}, {"$project": {"a": 1}}]`, `[]`, false},
		"$addFields":   {OnShards, `{"$addFields": {"b": 1}}`, `[{"$match": {"k": 1}}, {"$addFields": {"b": 1}}]`, `[]`, false},
		"$set":         {OnShards, `{"$set": {"b": 1}}`, `[{"$match": {"k": 1}}, {"$set": {"b": 1}}]`, `[]`, false},
		"$unset":       {OnShards, `{"$unset": "b"}`, `[{"$match": {"k": 1}}, {"$unset": "b"}]`, `[]`, false},
		"$unwind":      {OnShards, `{"$unwind": "$t"}`, `[{"$match": {"k": 1}}, {"$unwind": "$t"}]`, `[]`, false},
		"$replaceRoot": {OnShards, `{"$replaceRoot": {"newRoot": "$a"}}`, `[{"$match": {"k": 1}}, {"$replaceRoot": {"newRoot": "$a"}}]`, `[]`, false},
		"$replaceWith": {OnShards, `{"$replaceWith": "$a"}`, `[{"$match": {"k": 1}}, {"$replaceWith": "$a"}]`, `[]`, false},

		"$sort":  {Split, `{"$sort": {"a": 1}}`, `[{"$match": {"k": 1}}, {"$sort": {"a": 1}}]`, `[]`, true},
		"$limit": {Split, `{"$limit": 3}`, `[{"$match": {"k": 1}}, {"$limit": 3}]`, `[{"$limit": 3}]`, false},
		"$skip":  {Split, `{"$skip": 3}`, `[{"$match": {"k": 1}}]`, `[{"$skip": 3}]`, false},
		"$group": {Split, `{"$group": {"_id": "$a", "n": {"$sum": 1}}}`,
			`[{"$match": {"k": 1}}, {"$group": {"_id": "$a", "p1": {"$sum": 1}}}]`,
			`[{"$group": {"_id": "$_id", "p1": {"$sum": "$p1"}}}, {"$project": {"_id": true, "n": "$p1"}}]`, false},
		"$count": {Split, `{"$count": "c"}`,
			`[{"$match": {"k": 1}}, {"$group": {"_id": null, "n": {"$sum": 1}}}]`,
			`[{"$group": {"_id": null, "n": {"$sum": "$n"}}}, {"$replaceWith": {"c": "$n"}}]`, false},
		"$sortByCount": {Split, `{"$sortByCount": "$a"}`,
			`[{"$match": {"k": 1}}, {"$group": {"_id": "$a", "count": {"$sum": 1}}}]`,
			`[{"$group": {"_id": "$_id", "count": {"$sum": "$count"}}}, {"$sort": {"count": -1}}]`, false},
		"$bucket": {Split, `{"$bucket": {"groupBy": "$a", "boundaries": [0, 5], "default": "x"}}`,
			`[{"$match": {"k": 1}}, {"$bucket": {"groupBy": "$a", "boundaries": [0, 5], "default": "x", "output": {"p1": {"$sum": 1}}}}]`,
			`[{"$group": {"_id": "$_id", "p1": {"$sum": "$p1"}}}, {"$project": {"_id": true, "count": "$p1"}}, {"$sort": {"_id": 1}}]`, false},

		"$lookup":    {OnRouter, `{"$lookup": {"from": "o", "localField": "a", "foreignField": "b", "as": "j"}}`, `[{"$match": {"k": 1}}]`, `[{"$lookup": {"from": "o", "localField": "a", "foreignField": "b", "as": "j"}}]`, false},
		"$unionWith": {OnRouter, `{"$unionWith": "o"}`, `[{"$match": {"k": 1}}]`, `[{"$unionWith": "o"}]`, false},
		"$facet":     {OnRouter, `{"$facet": {"f": [{"$limit": 1}]}}`, `[{"$match": {"k": 1}}]`, `[{"$facet": {"f": [{"$limit": 1}]}}]`, false},
		"$sample":    {OnRouter, `{"$sample": {"size": 2}}`, `[{"$match": {"k": 1}}]`, `[{"$sample": {"size": 2}}]`, false},
		// Stages that must come first are sampled alone (below).
		"$documents":         {OnRouter, `{"$documents": [{"a": 1}]}`, `[]`, `[{"$documents": [{"a": 1}]}]`, false},
		"$collStats":         {OnRouter, `{"$collStats": {}}`, `[]`, `[{"$collStats": {}}]`, false},
		"$listLocalSessions": {OnRouter, `{"$listLocalSessions": {}}`, `[]`, `[{"$listLocalSessions": {}}]`, false},
	}
	assertOneRowEach(t, aggregate.StageNames(), slices.Collect(maps.Keys(rows)), "stage", "say where it runs when a pipeline is split (stagePlacements)")
	for name, row := range rows {
		if got := StagePlacement(name); got != row.placement {
			t.Errorf("%s: placement %d, want %d", name, got, row.placement)
		}
		stages := []bson.D{ejson(t, row.stage)}
		if row.shards != `[]` {
			stages = append([]bson.D{ejson(t, `{"$match": {"k": 1}}`)}, stages...)
		}
		split, err := SplitPipeline(stages)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		assertStages(t, name+" shards", split.ShardPipeline, stagesOf(t, row.shards))
		assertStages(t, name+" router", split.MergePipeline, stagesOf(t, row.router))
		if (len(split.MergeSort) > 0) != row.mergeSortDefined {
			t.Errorf("%s: merge sort %v", name, split.MergeSort)
		}
	}
}

// assertOneRowEach fails for each registry name without a row, and each
// row without its name in the registry.
func assertOneRowEach(t *testing.T, registry, rows []string, what, hint string) {
	t.Helper()
	for _, name := range registry {
		if !slices.Contains(rows, name) {
			t.Errorf("%s %s has no row: %s", what, name, hint)
		}
	}
	for _, name := range rows {
		if !slices.Contains(registry, name) {
			t.Errorf("row for %s %s, which is not in the registry", what, name)
		}
	}
}

func assertStages(t *testing.T, what string, got, want []bson.D) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if !sameJSON(got[i], want[i]) {
			t.Errorf("%s: stage %d is %s, want %s", what, i, bsonutil.Format(got[i]), bsonutil.Format(want[i]))
		}
	}
}

// sameJSON compares documents by value and field order, numbers of any
// type equal when their values are.
func sameJSON(a, b bson.D) bool { return bsonutil.Compare(a, b) == 0 && len(a) == len(b) }

// TestEveryAccumulatorHasASplit holds a row for every accumulator $group
// accepts: whether it splits into shard partials. A $group with one that
// does not split runs whole on the router. The property test checks the
// values of every splitting one.
func TestEveryAccumulatorHasASplit(t *testing.T) {
	rows := map[string]string{ // how the router merges the shards' partials
		"$sum":          "$sum of the partial sums",
		"$count":        "$sum of the partial counts",
		"$avg":          "partial sum and count of numbers, merged by $sum, then divided",
		"$min":          "$min of the partial minimums",
		"$max":          "$max of the partial maximums",
		"$first":        "$first of the partials in stream order",
		"$last":         "$last of the partials in stream order",
		"$push":         "partial arrays joined with $concatArrays in stream order",
		"$addToSet":     "partial sets joined with $setUnion",
		"$mergeObjects": "$mergeObjects of the partial merges in stream order",
		"$stdDevPop":    "partial count, sum and sum of squares, merged by $sum",
		"$stdDevSamp":   "partial count, sum and sum of squares, merged by $sum",
	}
	assertOneRowEach(t, aggregate.GroupAccumulatorNames(), slices.Collect(maps.Keys(rows)), "accumulator", "say how it splits (accumulatorSplitters), or that it runs on the router")
	for op, how := range rows {
		arg := any("$v")
		if op == "$count" {
			arg = bson.D{}
		}
		spec := bson.D{{Key: "_id", Value: "$g"}, {Key: "f", Value: bson.D{{Key: op, Value: arg}}}}
		split, err := SplitPipeline([]bson.D{{{Key: "$group", Value: spec}}})
		if err != nil {
			t.Fatal(err)
		}
		splits := how != "router"
		if AccumulatorSplits(op) != splits || (len(split.ShardPipeline) == 1) != splits {
			t.Errorf("%s: splits %v, shard pipeline %v; want %q", op, AccumulatorSplits(op), split.ShardPipeline, how)
		}
	}
}

// TestGroupWithAnUnsplitAccumulatorRunsOnTheRouter: one accumulator that
// does not split keeps the whole $group, and what follows, on the router.
func TestGroupWithAnUnsplitAccumulatorRunsOnTheRouter(t *testing.T) {
	stages := stagesOf(t, `[{"$match": {"k": 1}}, {"$group": {"_id": "$g", "n": {"$sum": 1}, "x": {"$median": {"input": "$v", "method": "approximate"}}}}, {"$limit": 2}]`)
	split, err := SplitPipeline(stages)
	if err != nil {
		t.Fatal(err)
	}
	assertStages(t, "shards", split.ShardPipeline, stages[:1])
	assertStages(t, "router", split.MergePipeline, stages[1:])
}

// TestSplitLimitsShardsByLaterSkipsAndLimits: the shards of a $sort or a
// $skip get a $limit of the skips plus the first limit after them.
func TestSplitLimitsShardsByLaterSkipsAndLimits(t *testing.T) {
	cases := []struct{ pipeline, shards, router string }{
		{`[{"$sort": {"a": 1}}, {"$skip": 2}, {"$skip": 3}, {"$limit": 4}, {"$limit": 1}]`,
			`[{"$sort": {"a": 1}}, {"$limit": 9}]`, `[{"$skip": 2}, {"$skip": 3}, {"$limit": 4}, {"$limit": 1}]`},
		{`[{"$skip": 2}, {"$limit": 4}]`, `[{"$limit": 6}]`, `[{"$skip": 2}, {"$limit": 4}]`},
		{`[{"$skip": 2}, {"$project": {"a": 1}}, {"$limit": 4}]`, `[]`, `[{"$skip": 2}, {"$project": {"a": 1}}, {"$limit": 4}]`},
		{`[{"$sort": {"a": 1}}, {"$skip": 9223372036854775807}, {"$limit": 4}]`,
			`[{"$sort": {"a": 1}}]`, `[{"$skip": 9223372036854775807}, {"$limit": 4}]`},
		{`[{"$project": {"a": 1}}]`, `[{"$project": {"a": 1}}]`, `[]`},
	}
	for _, tc := range cases {
		split, err := SplitPipeline(stagesOf(t, tc.pipeline))
		if err != nil {
			t.Fatal(err)
		}
		assertStages(t, tc.pipeline+" shards", split.ShardPipeline, stagesOf(t, tc.shards))
		assertStages(t, tc.pipeline+" router", split.MergePipeline, stagesOf(t, tc.router))
	}
}
