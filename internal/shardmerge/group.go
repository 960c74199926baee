package shardmerge

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// A $group splits when every accumulator does: each shard groups its own
// documents into partial states, the router groups those partials by _id
// and a $project turns the merged states into the accumulators' results.
// A $group with an accumulator that does not split runs whole on the
// router.

// groupSplitter splits one accumulator. arg is its argument expression
// and p the prefix of its partial fields, unique in the group.
type groupSplitter func(op string, arg any, p string) accumulatorSplit

// accumulatorSplit is one accumulator's three parts.
type accumulatorSplit struct {
	partial bson.D // fields of the shards' $group
	merge   bson.D // fields of the router's $group
	final   any    // the result, from the merged fields
}

// AccumulatorSplits reports whether $group's accumulator op splits into
// shard partials and a router merge.
func AccumulatorSplits(op string) bool {
	_, ok := accumulatorSplitters()[op]
	return ok
}

// accumulatorSplitters is the table of accumulators that split. $first
// and $last merge in stream order: a $group that follows a $sort is
// never split (the split ends at the $sort), so their input order on the
// shards is the order of their streams.
func accumulatorSplitters() map[string]groupSplitter {
	return map[string]groupSplitter{
		"$sum": sameOp, "$min": sameOp, "$max": sameOp, "$first": sameOp,
		"$last": sameOp, "$mergeObjects": sameOp,
		"$count":      countSplit,
		"$push":       arraySplit("$concatArrays"),
		"$addToSet":   arraySplit("$setUnion"),
		"$avg":        avgSplit,
		"$stdDevPop":  stdDevSplit(false),
		"$stdDevSamp": stdDevSplit(true),
	}
}

// sameOp merges partials with the accumulator itself: the sum of sums,
// the smallest of minimums, the first of firsts, ...
func sameOp(op string, arg any, p string) accumulatorSplit {
	return accumulatorSplit{
		partial: bson.D{{Key: p, Value: bson.D{{Key: op, Value: arg}}}},
		merge:   bson.D{{Key: p, Value: bson.D{{Key: op, Value: "$" + p}}}},
		final:   "$" + p,
	}
}

// countSplit: {$count: {}} counts on the shards, then sums.
func countSplit(_ string, _ any, p string) accumulatorSplit {
	return sameOp("$sum", int32(1), p)
}

// arraySplit collects each shard's array, then joins them in stream order
// with combine ($concatArrays for $push, $setUnion for $addToSet).
func arraySplit(combine string) groupSplitter {
	return func(op string, arg any, p string) accumulatorSplit {
		return accumulatorSplit{
			partial: bson.D{{Key: p, Value: bson.D{{Key: op, Value: arg}}}},
			merge:   bson.D{{Key: p, Value: bson.D{{Key: "$push", Value: "$" + p}}}},
			final: bson.D{{Key: "$reduce", Value: bson.D{
				{Key: "input", Value: "$" + p},
				{Key: "initialValue", Value: bson.A{}},
				{Key: "in", Value: bson.D{{Key: combine, Value: bson.A{"$$value", "$$this"}}}},
			}}},
		}
	}
}

// avgSplit carries the sum and the count of the numbers, as mongod's
// partial $avg does; no numbers at all average to null.
func avgSplit(_ string, arg any, p string) accumulatorSplit {
	sum, n := p+"s", p+"n"
	return accumulatorSplit{
		partial: bson.D{
			{Key: sum, Value: bson.D{{Key: "$sum", Value: arg}}},
			{Key: n, Value: bson.D{{Key: "$sum", Value: countIfNumber(arg)}}},
		},
		merge: sumFields(sum, n),
		final: nullIfFewer(n, 1, op2("$divide", "$"+sum, "$"+n)),
	}
}

// stdDevSplit carries the count, sum and sum of squares of the numbers as
// doubles; sample needs two numbers, the population one.
func stdDevSplit(sample bool) groupSplitter {
	return func(_ string, arg any, p string) accumulatorSplit {
		n, sum, sq := p+"n", p+"s", p+"q"
		x := bson.D{{Key: "$toDouble", Value: arg}}
		asDouble := bson.D{{Key: "$cond", Value: bson.A{isNumber(arg), x, nil}}}
		square := bson.D{{Key: "$cond", Value: bson.A{isNumber(arg), op2("$multiply", x, x), nil}}}
		divisor, least := any("$"+n), int32(1)
		if sample {
			divisor, least = op2("$subtract", "$"+n, int32(1)), 2
		}
		// (Σx² − (Σx)²/n) / divisor, floored at 0 against rounding.
		spread := op2("$subtract", "$"+sq, op2("$divide", op2("$multiply", "$"+sum, "$"+sum), "$"+n))
		variance := op2("$max", int32(0), op2("$divide", spread, divisor))
		return accumulatorSplit{
			partial: bson.D{
				{Key: n, Value: bson.D{{Key: "$sum", Value: countIfNumber(arg)}}},
				{Key: sum, Value: bson.D{{Key: "$sum", Value: asDouble}}},
				{Key: sq, Value: bson.D{{Key: "$sum", Value: square}}},
			},
			merge: sumFields(n, sum, sq),
			final: nullIfFewer(n, least, bson.D{{Key: "$sqrt", Value: variance}}),
		}
	}
}

func isNumber(arg any) bson.D { return bson.D{{Key: "$isNumber", Value: bson.A{arg}}} }

func countIfNumber(arg any) bson.D {
	return bson.D{{Key: "$cond", Value: bson.A{isNumber(arg), int32(1), int32(0)}}}
}

func op2(op string, a, b any) bson.D { return bson.D{{Key: op, Value: bson.A{a, b}}} }

// sumFields sums each named partial field over the shards.
func sumFields(names ...string) bson.D {
	out := make(bson.D, 0, len(names))
	for _, name := range names {
		out = append(out, bson.E{Key: name, Value: bson.D{{Key: "$sum", Value: "$" + name}}})
	}
	return out
}

// nullIfFewer is value, or null when the count field n is below least.
func nullIfFewer(n string, least int32, value any) bson.D {
	return bson.D{{Key: "$cond", Value: bson.A{op2("$lt", "$"+n, least), nil, value}}}
}

// splitGroupAt cuts the pipeline at stage i, a $group: split in two when
// every accumulator splits, else the whole $group and the rest run on the
// router.
func splitGroupAt(stages []bson.D, i int) (*PipelineSplit, error) {
	spec, _ := stages[i][0].Value.(bson.D)
	partial, merge, ok := splitGroup(spec)
	if !ok {
		return &PipelineSplit{ShardPipeline: stages[:i], MergePipeline: stages[i:]}, nil
	}
	shards := append(stages[:i:i], partial)
	return &PipelineSplit{ShardPipeline: shards, MergePipeline: append(merge, stages[i+1:]...)}, nil
}

// splitGroup returns the shards' $group and the router's stages.
func splitGroup(spec bson.D) (partial bson.D, merge []bson.D, ok bool) {
	splitters := accumulatorSplitters()
	shardGroup := bson.D{{Key: "_id", Value: idOf(spec)}}
	mergeGroup := bson.D{{Key: "_id", Value: "$_id"}}
	final := bson.D{{Key: "_id", Value: true}}
	for i, field := range spec {
		if field.Key == "_id" {
			continue
		}
		acc, isDoc := field.Value.(bson.D)
		if !isDoc || len(acc) != 1 {
			return nil, nil, false
		}
		split, known := splitters[acc[0].Key]
		if !known {
			return nil, nil, false
		}
		parts := split(acc[0].Key, acc[0].Value, "p"+strconv.Itoa(i))
		shardGroup = append(shardGroup, parts.partial...)
		mergeGroup = append(mergeGroup, parts.merge...)
		final = append(final, bson.E{Key: field.Key, Value: parts.final})
	}
	merge = []bson.D{{{Key: "$group", Value: mergeGroup}}, {{Key: "$project", Value: final}}}
	return bson.D{{Key: "$group", Value: shardGroup}}, merge, true
}

// splitBucketAt cuts the pipeline at stage i, a $bucket: a $group by
// bucket followed by a sort on _id, as mongod expands it. The shards
// bucket their documents into partial states, the router merges them as
// a split $group does and sorts the buckets.
func splitBucketAt(stages []bson.D, i int) (*PipelineSplit, error) {
	spec, _ := stages[i][0].Value.(bson.D)
	output := bson.D{{Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}
	if v, ok := bsonutil.Field(spec, "output"); ok {
		output, _ = v.(bson.D)
	}
	partial, merge, ok := splitGroup(append(bson.D{{Key: "_id", Value: nil}}, output...))
	if !ok || len(output) == 0 {
		return &PipelineSplit{ShardPipeline: stages[:i], MergePipeline: stages[i:]}, nil
	}
	partialOutput := partial[0].Value.(bson.D)[1:] // without the _id
	shardBucket := bson.D{{Key: "$bucket", Value: bsonutil.WithField(spec, "output", partialOutput)}}
	merge = append(merge, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: int32(1)}}}})
	return &PipelineSplit{ShardPipeline: append(stages[:i:i], shardBucket), MergePipeline: append(merge, stages[i+1:]...)}, nil
}

func idOf(spec bson.D) any {
	for _, e := range spec {
		if e.Key == "_id" {
			return e.Value
		}
	}
	return nil
}
