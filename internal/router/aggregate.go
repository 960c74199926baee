package router

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/shardmerge"
)

// cmdAggregate runs a pipeline: on the one shard a leading $match pins,
// or split by internal/shardmerge — what can run per shard (stages that
// see one document at a time, a $sort with its limit, a $group's partial
// accumulators) on every shard, the rest on the router over the merged
// results.
func cmdAggregate(r *Router, op *operation) (bson.D, error) {
	coll, isColl := op.body[0].Value.(string)
	pipeline := bsonutil.ToA(mustField(op.body, "pipeline"))
	if isChangeStreamPipeline(pipeline) {
		return cmdChangeStream(r, op, coll, pipeline)
	}
	if !isColl && len(pipeline) > 0 && stageName(pipeline[0]) == "$currentOp" {
		return r.aggregateCurrentOp(op, pipeline)
	}
	if !isColl {
		return forwardToConfig(r, op) // collectionless: admin's stages live on the config servers
	}
	ns := op.db + "." + coll
	if foreign, first, writes := shardmerge.ForeignNamespaces(op.db, pipeline); first != "" {
		if err := refuseMisplacedChangeStream(pipeline); err != nil {
			return nil, err
		}
		return r.aggregateOnPrimary(op, ns, foreign, first, writes)
	}
	if err := refuseUnsupportedStages(pipeline); err != nil {
		return nil, err
	}
	_, ts, err := r.readTargets(op, ns, leadingMatch(pipeline))
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardCursor(op, ts[0], passThrough(op.body))
	}
	return r.scatterAggregate(op, ns, ts, pipeline)
}

// refuseUnsupportedStages refuses what the router cannot run over
// several shards in this version: a misplaced or (from explain) leading
// $changeStream, and the stages that name other collections.
func refuseUnsupportedStages(pipeline bson.A) error {
	if err := refuseMisplacedChangeStream(pipeline); err != nil {
		return err
	}
	for _, raw := range pipeline {
		name := stageName(raw)
		if _, foreign := shardmerge.ForeignStages[name]; foreign || name == "$changeStream" {
			return mongoerr.Newf(mongoerr.IllegalOperation, "%s is not supported through mayfly route in this version", name)
		}
	}
	return nil
}

// refuseMisplacedChangeStream refuses a $changeStream after the first
// stage, as mongod does.
func refuseMisplacedChangeStream(pipeline bson.A) error {
	for i, raw := range pipeline {
		if i > 0 && stageName(raw) == "$changeStream" {
			return mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline.")
		}
	}
	return nil
}

func stageName(raw any) string {
	d := bsonutil.ToD(raw)
	if len(d) != 1 {
		return ""
	}
	return d[0].Key
}

// leadingMatch is the filter of a pipeline's first stage when it is a $match.
func leadingMatch(pipeline bson.A) bson.D {
	if len(pipeline) > 0 && stageName(pipeline[0]) == "$match" {
		return bsonutil.ToD(bsonutil.ToD(pipeline[0])[0].Value)
	}
	return nil
}

// splitAggregate cuts a pipeline into the shards' part and the
// router's: internal/shardmerge's split, except that a leading
// $collStats goes to every shard, each answer tagged with its shard (as
// mongos does for getShardDistribution).
func splitAggregate(pipeline bson.A) (*shardmerge.PipelineSplit, error) {
	stages := make([]bson.D, len(pipeline))
	for i, raw := range pipeline {
		stages[i] = bsonutil.ToD(raw)
	}
	if len(stages) > 0 && stageName(pipeline[0]) == "$collStats" {
		return &shardmerge.PipelineSplit{ShardPipeline: stages[:1], MergePipeline: stages[1:]}, nil
	}
	return shardmerge.SplitPipeline(stages)
}

func (r *Router) scatterAggregate(op *operation, ns string, ts []target, pipeline bson.A) (bson.D, error) {
	split, err := splitAggregate(pipeline)
	if err != nil {
		return nil, err
	}
	collator, err := collatorOf(op.body)
	if err != nil {
		return nil, err
	}
	rest, err := aggregate.Parse(stagesA(split.MergePipeline), aggregate.Options{AllowDiskUse: true,
		Let: bsonutil.ToD(mustField(op.body, "let")), Collation: collator})
	if err != nil {
		return nil, err
	}
	cmd := bsonutil.WithField(passThrough(op.body), "pipeline", stagesA(split.ShardPipeline))
	cmd = bsonutil.WithField(cmd, "cursor", bson.D{})
	streams, err := r.openStreams(op, ts, cmd)
	if err != nil {
		return nil, err
	}
	out, err := r.mergeAggregate(split, streams, ts, rest, collator, len(pipeline) > 0 && stageName(pipeline[0]) == "$collStats")
	if err != nil {
		for _, s := range streams {
			_ = s.Close()
		}
		return nil, err
	}
	return r.firstBatch(op, ns, &mergedCursor{streams: streams, out: out}, aggregateBatchSize(op.body), false)
}

// aggregateBatchSize is an aggregate's first batch: cursor.batchSize,
// defaultBatchSize when it names none.
func aggregateBatchSize(body bson.D) int64 {
	if v, ok := bsonutil.Field(bsonutil.ToD(mustField(body, "cursor")), "batchSize"); ok {
		return toInt64(v)
	}
	return defaultBatchSize
}

// mergeAggregate merges the shards' streams and runs the router's part
// of the pipeline over them.
func (r *Router) mergeAggregate(split *shardmerge.PipelineSplit, streams []*shardStream, ts []target,
	rest *aggregate.Pipeline, collator query.Collator, tagged bool) (aggregate.Iterator, error) {
	inputs := iterators(streams)
	if tagged {
		inputs = tagShards(inputs, ts)
	}
	merged, err := split.Merge(inputs, collator)
	if err != nil {
		return nil, err
	}
	return rest.Run(merged, routerEnv{clock: r.clock})
}

func stagesA(stages []bson.D) bson.A {
	out := make(bson.A, len(stages))
	for i, s := range stages {
		out[i] = s
	}
	return out
}

// tagShards names each shard's $collStats document with its shard, as
// mongos does (getShardDistribution reads it).
func tagShards(inputs []aggregate.Iterator, ts []target) []aggregate.Iterator {
	out := make([]aggregate.Iterator, len(inputs))
	for i, in := range inputs {
		shard := ts[i].shard
		out[i] = &mapIter{in: in, f: func(d bson.D) (bson.D, error) {
			return bsonutil.WithField(d, "shard", shard), nil
		}}
	}
	return out
}

// routerEnv is what the router's part of a pipeline sees around it: no
// other collection, no storage statistics.
type routerEnv struct {
	clock interface{ Now() time.Time }
}

func (routerEnv) Collection(name string) (aggregate.Iterator, error) {
	return nil, mongoerr.Newf(mongoerr.IllegalOperation, "reading collection %s from the router's part of a pipeline is not supported", name)
}

func (routerEnv) CollStats(bson.D) (bson.D, error) {
	return nil, mongoerr.New(mongoerr.IllegalOperation, "$collStats over several shards is not supported through mayfly route in this version")
}

func (e routerEnv) Now() time.Time { return e.clock.Now() }
