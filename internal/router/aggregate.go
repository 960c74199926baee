package router

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// cmdAggregate runs a pipeline: on the one shard a leading $match pins,
// or split — the leading stages that see one document at a time (and a
// $sort, with the $limit after it) on every shard, the rest on the
// router over the merged results.
func cmdAggregate(r *Router, op *operation) (bson.D, error) {
	coll, isColl := op.body[0].Value.(string)
	if !isColl {
		return forwardToConfig(r, op) // collectionless: admin's stages live on the config servers
	}
	pipeline := bsonutil.ToA(mustField(op.body, "pipeline"))
	if err := refuseUnsupportedStages(pipeline); err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
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
// several shards in this version.
func refuseUnsupportedStages(pipeline bson.A) error {
	for _, raw := range pipeline {
		name := stageName(raw)
		switch name {
		case "$changeStream", "$out", "$merge", "$lookup", "$graphLookup", "$unionWith":
			return mongoerr.Newf(mongoerr.IllegalOperation, "%s is not supported through mayfly route in this version", name)
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

// streamingStage names the stages a shard can run on its own documents
// with the same result as over all of them.
func streamingStage(name string) bool {
	switch name {
	case "$match", "$project", "$addFields", "$set", "$unset", "$unwind", "$replaceRoot", "$replaceWith", "$redact":
		return true
	}
	return false
}

// splitPipeline cuts a pipeline into the shards' part and the router's,
// and returns the sort the router merges by (a $sort moved to the shards).
func splitPipeline(pipeline bson.A) (shards, router bson.A, sort bson.D) {
	shards = bson.A{}
	if len(pipeline) > 0 && stageName(pipeline[0]) == "$collStats" {
		return append(shards, pipeline[0]), append(bson.A{}, pipeline[1:]...), nil
	}
	i := 0
	for i < len(pipeline) && streamingStage(stageName(pipeline[i])) {
		i++
	}
	shards = append(shards, pipeline[:i]...)
	if i < len(pipeline) && stageName(pipeline[i]) == "$sort" {
		sort = bsonutil.ToD(bsonutil.ToD(pipeline[i])[0].Value)
		shards = append(shards, pipeline[i])
		i++
		if i < len(pipeline) && stageName(pipeline[i]) == "$limit" {
			shards = append(shards, pipeline[i]) // also kept on the router, below
		}
	}
	return shards, append(bson.A{}, pipeline[i:]...), sort
}

func (r *Router) scatterAggregate(op *operation, ns string, ts []target, pipeline bson.A) (bson.D, error) {
	shardPart, routerPart, sortSpec := splitPipeline(pipeline)
	var sort *query.Sort
	if len(sortSpec) > 0 {
		s, err := query.NewSort(sortSpec)
		if err != nil {
			return nil, err
		}
		sort = s
	}
	rest, err := aggregate.Parse(routerPart, aggregate.Options{AllowDiskUse: true, Let: bsonutil.ToD(mustField(op.body, "let"))})
	if err != nil {
		return nil, err
	}
	cmd := bsonutil.WithField(passThrough(op.body), "pipeline", shardPart)
	cmd = bsonutil.WithField(cmd, "cursor", bson.D{})
	streams, err := r.openStreams(op, ts, cmd)
	if err != nil {
		return nil, err
	}
	inputs := iterators(streams)
	if stageName(pipeline[0]) == "$collStats" {
		inputs = tagShards(inputs, ts)
	}
	out, err := rest.Run(r.merger.Merge(inputs, sort), routerEnv{clock: r.clock})
	if err != nil {
		for _, s := range streams {
			_ = s.Close()
		}
		return nil, err
	}
	cursorOpt := bsonutil.ToD(mustField(op.body, "cursor"))
	batchSize := int64(defaultBatchSize)
	if v, ok := bsonutil.Field(cursorOpt, "batchSize"); ok {
		batchSize = toInt64(v)
	}
	return r.firstBatch(op, ns, &mergedCursor{streams: streams, out: out}, batchSize, false)
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
