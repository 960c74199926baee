package shardmerge

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/query"
)

// The property: splitting, running each part on its shard and merging
// gives what one server gives over all the data. The data of each case
// is dealt at random to 2 or 3 shards; the reference runs over the
// shards' documents concatenated in shard order, which is the order a
// stable merge of stable shard sorts must reproduce exactly.

const (
	seedsPerCase = 12
	maxDocs      = 160 // documents per data set (the brief's bound is 500)
)

// randomDocs makes a data set with ties in every sort key, missing
// fields, and mixed types (int32, int64, double and decimal numbers that
// compare equal, strings in mixed case, null, arrays, documents).
func randomDocs(r *rand.Rand) []bson.D {
	n := 20 + r.IntN(maxDocs-20)
	docs := make([]bson.D, n)
	for i := range docs {
		d := bson.D{{Key: "_id", Value: int32(i)}}
		if v, ok := randomGroupKey(r); ok {
			d = append(d, bson.E{Key: "g", Value: v})
		}
		if v, ok := randomNumber(r); ok {
			d = append(d, bson.E{Key: "v", Value: v})
		}
		d = append(d, bson.E{Key: "k", Value: int32(r.IntN(5))})
		if r.IntN(4) > 0 {
			d = append(d, bson.E{Key: "s", Value: []string{"apple", "Apple", "banana", "BANANA", "cherry"}[r.IntN(5)]})
		}
		d = append(d, bson.E{Key: "a", Value: randomNested(r)})
		d = append(d, bson.E{Key: "tags", Value: randomTags(r)})
		docs[i] = d
	}
	return docs
}

func randomGroupKey(r *rand.Rand) (any, bool) {
	switch r.IntN(8) {
	case 0:
		return nil, false
	case 1:
		return nil, true
	case 2:
		return int64(r.IntN(3)), true
	case 3:
		return float64(r.IntN(3)), true
	case 4:
		return []string{"x", "y"}[r.IntN(2)], true
	}
	return int32(r.IntN(3)), true
}

func randomNumber(r *rand.Rand) (any, bool) {
	switch r.IntN(10) {
	case 0:
		return nil, false
	case 1:
		return "not a number", true
	case 2:
		return float64(r.IntN(200)) / 4, true
	case 3:
		return int64(r.IntN(1000)), true
	case 4:
		return nil, true
	case 5:
		d, _ := bson.ParseDecimal128(strconv.Itoa(r.IntN(90)) + ".25")
		return d, true
	}
	return int32(r.IntN(100) - 20), true
}

func randomNested(r *rand.Rand) any {
	switch r.IntN(4) {
	case 0:
		return bson.A{bson.D{{Key: "x", Value: int32(r.IntN(4))}, {Key: "y", Value: int32(r.IntN(4))}}, bson.D{{Key: "x", Value: int32(r.IntN(4))}}}
	case 1:
		return "scalar"
	}
	return bson.D{{Key: "x", Value: int32(r.IntN(4))}, {Key: "y", Value: int32(r.IntN(4))}}
}

func randomTags(r *rand.Rand) bson.A {
	tags := bson.A{}
	for range r.IntN(4) {
		tags = append(tags, []string{"red", "green", "blue"}[r.IntN(3)])
	}
	return tags
}

// deal gives each document to one of 2 or 3 shards at random; the
// reference data is the shards' documents in shard order.
func deal(r *rand.Rand, docs []bson.D) (shards [][]bson.D, union []bson.D) {
	shards = make([][]bson.D, 2+r.IntN(2))
	for _, d := range docs {
		i := r.IntN(len(shards))
		shards[i] = append(shards[i], d)
	}
	for _, s := range shards {
		union = append(union, s...)
	}
	return shards, union
}

// caseRNG gives each case and seed its own reproducible stream.
func caseRNG(caseIndex, seed int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(caseIndex), uint64(seed)))
}

func caseInsensitive(t testing.TB) *collation.Collation {
	t.Helper()
	c, err := collation.Parse(bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pipelineCases are representative pipelines. ordered means the result
// order is defined (each ends in a sort that the data makes total, or
// merges stably), so it is compared in order.
var pipelineCases = []struct {
	name      string
	pipeline  string
	ordered   bool
	collation bool
	// setFields are $addToSet outputs: MongoDB leaves the order of their
	// elements unspecified, so they compare as sets.
	setFields []string
}{
	{"match only", `[{"$match": {"k": {"$gte": 2}}}]`, false, false, nil},
	{"match project", `[{"$match": {"v": {"$type": "number"}}}, {"$project": {"v": 1, "twice": {"$multiply": ["$v", 2]}}}]`, false, false, nil},
	{"sort ties stable", `[{"$sort": {"k": 1}}]`, true, false, nil},
	{"sort two keys", `[{"$match": {"k": {"$lt": 4}}}, {"$sort": {"g": -1, "k": 1}}]`, true, false, nil},
	{"sort skip limit", `[{"$sort": {"v": 1, "_id": 1}}, {"$skip": 7}, {"$limit": 11}]`, true, false, nil},
	{"sort limit project", `[{"$sort": {"a.x": -1, "_id": 1}}, {"$limit": 9}, {"$project": {"a": 1}}]`, true, false, nil},
	{"limit", `[{"$match": {"k": 1}}, {"$limit": 5}, {"$count": "n"}]`, true, false, nil},
	{"skip then limit", `[{"$skip": 3}, {"$limit": 4}, {"$group": {"_id": null, "n": {"$sum": 1}}}]`, true, false, nil},
	{"skip alone", `[{"$skip": 20}, {"$count": "rest"}]`, true, false, nil},
	{"count", `[{"$match": {"k": {"$ne": 0}}}, {"$count": "total"}]`, true, false, nil},
	{"count nothing", `[{"$match": {"k": 99}}, {"$count": "total"}]`, true, false, nil},
	{"unwind group", `[{"$unwind": "$tags"}, {"$group": {"_id": "$tags", "n": {"$sum": 1}, "ids": {"$push": "$_id"}}}]`, false, false, nil},
	{"group every splittable accumulator", `[{"$group": {"_id": "$g",
		"sum": {"$sum": "$v"}, "count": {"$count": {}}, "avg": {"$avg": "$v"},
		"min": {"$min": "$v"}, "max": {"$max": "$v"}, "first": {"$first": "$v"}, "last": {"$last": "$s"},
		"push": {"$push": "$k"}, "set": {"$addToSet": "$s"}, "merged": {"$mergeObjects": {"$cond": [{"$eq": [{"$type": "$a"}, "object"]}, "$a", null]}},
		"pop": {"$stdDevPop": "$v"}, "samp": {"$stdDevSamp": "$v"}}}]`, false, false, []string{"set"}},
	{"group by document key then sort", `[{"$group": {"_id": {"k": "$k", "even": {"$eq": [{"$mod": ["$_id", 2]}, 0]}}, "n": {"$sum": 1}, "avg": {"$avg": "$k"}}}, {"$sort": {"_id.k": 1, "_id.even": 1}}]`, true, false, nil},
	{"group with nothing to average", `[{"$group": {"_id": "$_id", "avg": {"$avg": "$s"}, "pop": {"$stdDevPop": "$s"}, "samp": {"$stdDevSamp": "$k"}, "one": {"$stdDevPop": "$k"}}}]`, false, false, nil},
	{"group null key", `[{"$group": {"_id": null, "total": {"$sum": "$v"}, "sd": {"$stdDevSamp": "$k"}}}]`, true, false, nil},
	{"group expression accumulators", `[{"$group": {"_id": {"$mod": ["$k", 2]}, "s": {"$sum": {"$multiply": ["$k", 3]}}, "mx": {"$max": {"$concat": ["$s", "!"]}}}}]`, false, false, nil},
	{"sortByCount", `[{"$unwind": "$tags"}, {"$sortByCount": "$tags"}, {"$sort": {"count": -1, "_id": 1}}]`, true, false, nil},
	{"bucket", `[{"$match": {"k": {"$gt": 0}}}, {"$bucket": {"groupBy": "$k", "boundaries": [0, 2, 5], "output": {"n": {"$sum": 1}, "avg": {"$avg": "$v"}, "ids": {"$push": "$_id"}}}}]`, true, false, nil},
	{"bucket default count", `[{"$bucket": {"groupBy": "$v", "boundaries": [0, 10, 50], "default": "other"}}, {"$limit": 2}]`, true, false, nil},
	{"router stage after shard stages", `[{"$match": {"k": {"$gt": 0}}}, {"$facet": {"byK": [{"$sortByCount": "$k"}], "n": [{"$count": "n"}]}}, {"$project": {"n": 1}}]`, true, false, nil},
	{"replaceWith unwind", `[{"$replaceWith": {"id": "$_id", "t": "$tags"}}, {"$unwind": {"path": "$t", "includeArrayIndex": "i"}}, {"$sort": {"id": 1, "i": 1}}]`, true, false, nil},
	{"sort under collation", `[{"$match": {"s": {"$exists": true}}}, {"$sort": {"s": 1, "k": 1}}, {"$project": {"s": 1, "k": 1}}]`, true, true, nil},
	{"group then limit", `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}, {"$limit": 3}]`, true, false, nil},
}

func TestSplitPipelineMatchesOneServer(t *testing.T) {
	ran := 0
	for ci, tc := range pipelineCases {
		t.Run(tc.name, func(t *testing.T) {
			stages := stagesOf(t, tc.pipeline)
			opt := aggregate.Options{}
			var coll query.Collator
			if tc.collation {
				c := caseInsensitive(t)
				opt.Collation, coll = c, c
			}
			split, err := SplitPipeline(stages)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range seedsPerCase {
				r := caseRNG(ci, seed)
				shards, union := deal(r, randomDocs(r))
				want := sortArrays(runPipeline(t, stages, union, opt), tc.setFields)
				got := sortArrays(runSplitPipeline(t, split, shards, opt, coll), tc.setFields)
				if err := sameDocs(got, want, tc.ordered); err != nil {
					t.Fatalf("seed %d, %d shards: %v\nshards: %v\nrouter: %v", seed, len(shards), err, split.ShardPipeline, split.MergePipeline)
				}
				ran++
			}
		})
	}
	t.Logf("%d pipeline cases compared", ran)
}

func runSplitPipeline(t testing.TB, split *PipelineSplit, shards [][]bson.D, opt aggregate.Options, coll query.Collator) []bson.D {
	t.Helper()
	outs := make([][]bson.D, len(shards))
	for i, docs := range shards {
		outs[i] = docs
		if len(split.ShardPipeline) > 0 {
			outs[i] = runPipeline(t, split.ShardPipeline, docs, opt)
		}
	}
	merged, err := split.Merge(streamsOf(outs), coll)
	if err != nil {
		t.Fatal(err)
	}
	if len(split.MergePipeline) == 0 {
		return drainAll(t, merged)
	}
	return runPipelineOver(t, split.MergePipeline, merged, opt)
}

// findCases are representative find commands.
var findCases = []struct {
	name      string
	cmd       string
	collation bool
}{
	{"no sort", `{"find": "c", "filter": {"k": {"$gte": 1}}}`, false},
	{"natural order is no merge sort", `{"find": "c", "sort": {"$natural": 1}, "skip": 4, "limit": 9}`, false},
	{"no sort skip limit", `{"find": "c", "skip": 5, "limit": 10}`, false},
	{"sort ties", `{"find": "c", "sort": {"k": 1}}`, false},
	{"sort desc skip limit", `{"find": "c", "sort": {"k": -1}, "skip": 13, "limit": 17}`, false},
	{"sort mixed types", `{"find": "c", "sort": {"v": 1}, "limit": 40}`, false},
	{"sort missing group key", `{"find": "c", "sort": {"g": -1, "v": 1}, "skip": 2}`, false},
	{"sort dotted through arrays", `{"find": "c", "sort": {"a.x": 1, "_id": -1}, "limit": 25}`, false},
	{"sort array field", `{"find": "c", "sort": {"tags": -1}, "skip": 1, "limit": 30}`, false},
	{"inclusion keeps sort key", `{"find": "c", "sort": {"k": 1}, "projection": {"k": 1, "s": 1}, "limit": 20}`, false},
	{"inclusion drops sort key", `{"find": "c", "sort": {"v": -1, "k": 1}, "projection": {"s": 1, "_id": 0}, "skip": 3, "limit": 12}`, false},
	{"inclusion of a sub-path", `{"find": "c", "sort": {"a.x": -1}, "projection": {"a.y": 1}, "limit": 15}`, false},
	{"exclusion of the sort key", `{"find": "c", "sort": {"_id": -1}, "projection": {"_id": 0, "tags": 0}, "limit": 8}`, false},
	{"computed projection", `{"find": "c", "filter": {"v": {"$type": "number"}}, "sort": {"v": 1}, "projection": {"v": {"$add": ["$v", 1]}, "k": 1}, "limit": 10}`, false},
	{"positional projection", `{"find": "c", "filter": {"tags": "red"}, "sort": {"k": 1}, "projection": {"tags.$": 1}, "skip": 1}`, false},
	{"single batch with limit", `{"find": "c", "sort": {"s": 1}, "limit": 6, "singleBatch": true, "batchSize": 2}`, false},
	{"collation sort", `{"find": "c", "filter": {"s": {"$exists": true}}, "sort": {"s": -1}, "projection": {"k": 1}, "limit": 30}`, true},
}

func TestSplitFindMatchesOneServer(t *testing.T) {
	ran := 0
	for ci, tc := range findCases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := ejson(t, tc.cmd)
			var coll query.Collator
			if tc.collation {
				coll = caseInsensitive(t)
			}
			split, err := SplitFind(cmd, coll)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range seedsPerCase {
				r := caseRNG(100+ci, seed)
				shards, union := deal(r, randomDocs(r))
				want := runFind(t, cmd, union, coll)
				outs := make([][]bson.D, len(shards))
				for i, docs := range shards {
					outs[i] = runFind(t, split.ShardCommand, docs, coll)
				}
				got := drainAll(t, split.Merge(streamsOf(outs)))
				if err := sameDocs(got, want, true); err != nil {
					t.Fatalf("seed %d, %d shards: %v\nshard command: %v", seed, len(shards), err, split.ShardCommand)
				}
				ran++
			}
		})
	}
	t.Logf("%d find cases compared", ran)
}

// sortArrays orders the elements of the named top-level array fields.
func sortArrays(docs []bson.D, fields []string) []bson.D {
	for _, d := range docs {
		for i, e := range d {
			if arr, ok := e.Value.(bson.A); ok && slices.Contains(fields, e.Key) {
				sorted := slices.Clone(arr)
				slices.SortFunc(sorted, bsonutil.Compare)
				d[i].Value = sorted
			}
		}
	}
	return docs
}
