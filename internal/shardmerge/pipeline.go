package shardmerge

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// PipelineSplit is an aggregation pipeline cut where mongod's router cuts
// it: the stages before the first one that needs all the data in one
// place run on every targeted shard, that stage is split in two when it
// can be, and the rest runs on the router over the merged streams.
type PipelineSplit struct {
	ShardPipeline []bson.D
	MergePipeline []bson.D
	// MergeSort, when set, is the order each shard's output is in: the
	// router merge-sorts the streams by it. Otherwise it concatenates.
	MergeSort bson.D
}

// Placement says where a stage runs when the pipeline is split.
type Placement int

const (
	// OnShards: the stage runs on every shard, per document, and the
	// split goes on past it.
	OnShards Placement = iota
	// Split: the stage is cut into a shard part and a merging part; the
	// split ends there.
	Split
	// OnRouter: the stage and everything after it run on the router.
	OnRouter
)

// StagePlacement says where a stage runs. Every stage internal/aggregate
// parses has a row; a stage without one runs on the router.
func StagePlacement(name string) Placement {
	p, ok := stagePlacements()[name]
	if !ok {
		return OnRouter
	}
	return p
}

// stagePlacements is the split's table of stages. Streaming stages that
// see one document at a time run on the shards; $lookup and $unionWith
// read other collections, $facet and $sample need the whole
// input, and $documents, $collStats and $listLocalSessions do not read
// the collection's documents at all: those run on the router.
func stagePlacements() map[string]Placement {
	return map[string]Placement{
		"$match": OnShards, "$project": OnShards, "$addFields": OnShards, "$set": OnShards,
		"$unset": OnShards, "$unwind": OnShards, "$replaceRoot": OnShards, "$replaceWith": OnShards,

		"$sort": Split, "$limit": Split, "$skip": Split, "$group": Split,
		"$count": Split, "$sortByCount": Split, "$bucket": Split,

		"$lookup": OnRouter, "$unionWith": OnRouter, "$facet": OnRouter,
		"$sample": OnRouter, "$documents": OnRouter, "$collStats": OnRouter,
		"$listLocalSessions": OnRouter,
	}
}

// SplitPipeline splits a pipeline the router has already validated
// (aggregate.Parse).
func SplitPipeline(stages []bson.D) (*PipelineSplit, error) {
	for i, st := range stages {
		if len(st) != 1 {
			return nil, fmt.Errorf("stage %d of the pipeline to split has %d fields, want 1", i, len(st))
		}
		switch StagePlacement(st[0].Key) {
		case OnShards:
			continue
		case Split:
			return splitAt(stages, i)
		}
		return &PipelineSplit{ShardPipeline: stages[:i], MergePipeline: stages[i:]}, nil
	}
	return &PipelineSplit{ShardPipeline: stages}, nil
}

// splitAt cuts the pipeline at stage i, a Split stage.
func splitAt(stages []bson.D, i int) (*PipelineSplit, error) {
	stage, rest := stages[i][0], stages[i+1:]
	shards := stages[:i:i]
	out := &PipelineSplit{}
	switch stage.Key {
	case "$sort":
		out.MergeSort, _ = stage.Value.(bson.D)
		shards = append(shards, bson.D{stage})
		if n, ok := leadingLimit(rest, 0); ok {
			shards = append(shards, limitStage(n))
		}
		out.MergePipeline = rest
	case "$limit":
		shards = append(shards, bson.D{stage})
		out.MergePipeline = append([]bson.D{{stage}}, rest...)
	case "$skip":
		skip, _ := count64(stage.Value)
		if n, ok := leadingLimit(rest, skip); ok {
			shards = append(shards, limitStage(n))
		}
		out.MergePipeline = append([]bson.D{{stage}}, rest...)
	case "$group":
		return splitGroupAt(stages, i)
	case "$bucket":
		return splitBucketAt(stages, i)
	case "$count":
		shards = append(shards, countPartial())
		out.MergePipeline = append(countMerge(stage.Value), rest...)
	case "$sortByCount":
		shards = append(shards, bson.D{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: stage.Value}, {Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}}})
		out.MergePipeline = append([]bson.D{
			{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$_id"}, {Key: "count", Value: bson.D{{Key: "$sum", Value: "$count"}}}}}},
			{{Key: "$sort", Value: bson.D{{Key: "count", Value: int32(-1)}}}},
		}, rest...)
	}
	out.ShardPipeline = shards
	return out, nil
}

// leadingLimit is the number of documents the stages after a cut can
// use, when they start with $skip and $limit stages ending in a $limit:
// the skips plus that limit (mongod folds them the same way). skipped is
// what a $skip at the cut already skips.
func leadingLimit(rest []bson.D, skipped int64) (int64, bool) {
	for _, st := range rest {
		n, ok := count64(st[0].Value)
		if !ok {
			return 0, false
		}
		switch st[0].Key {
		case "$skip":
			if n > math.MaxInt64-skipped {
				return 0, false
			}
			skipped += n
		case "$limit":
			if n > math.MaxInt64-skipped {
				return 0, false
			}
			return skipped + n, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// count64 reads a validated $skip or $limit argument.
func count64(v any) (int64, bool) {
	if !bsonutil.IsNumber(v) {
		return 0, false
	}
	return signedInt64(v), true
}

func limitStage(n int64) bson.D { return bson.D{{Key: "$limit", Value: n}} }

// countPartial is each shard's part of $count: its number of documents.
func countPartial() bson.D {
	return bson.D{{Key: "$group", Value: bson.D{
		{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}}}
}

// countMerge sums the shards' counts into {<field>: total}; field is
// $count's argument, a string once the pipeline is validated.
func countMerge(field any) []bson.D {
	name, _ := field.(string)
	return []bson.D{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
		{{Key: "$replaceWith", Value: bson.D{{Key: name, Value: "$n"}}}},
	}
}

// Merge merges the shards' output streams of the shard pipeline, for the
// merge pipeline to run over. collator is the command's non-simple
// collation, nil for the simple one.
func (ps *PipelineSplit) Merge(streams []aggregate.Iterator, collator query.Collator) (aggregate.Iterator, error) {
	if len(ps.MergeSort) == 0 {
		return Concat(streams), nil
	}
	s, err := query.NewSort(ps.MergeSort)
	if err != nil {
		return nil, fmt.Errorf("merge sort of a split pipeline: %w", err)
	}
	if collator != nil {
		s = s.WithCollation(collator)
	}
	return MergeSorted(s, streams), nil
}
