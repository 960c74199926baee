package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmerge"
)

// explainPlan is what the router sends each shard for an explained
// command, and how it answers.
type explainPlan struct {
	shardCmd    bson.D
	split       *shardmerge.PipelineSplit // an aggregate's
	sorted      bool
	skip, limit int64
}

// cmdExplain explains find, count, distinct and aggregate as mongos: each
// targeted shard explains its part, and the reply names the router's
// stage (SINGLE_SHARD, SHARD_MERGE, SHARD_MERGE_SORT) over the shards'
// plans, or an aggregate's split.
func cmdExplain(r *Router, op *operation) (bson.D, error) {
	inner, ok := op.body[0].Value.(bson.D)
	if !ok || len(inner) == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	coll, ok := inner[0].Value.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.%v'", op.db, inner[0].Value)
	}
	ns := op.db + "." + coll
	_, ts, err := r.readTargets(op, ns, explainedFilter(inner))
	if err != nil {
		return nil, err
	}
	plan, err := planExplain(inner, len(ts))
	if err != nil {
		return nil, err
	}
	verbosity, ok := bsonutil.Field(op.body, "verbosity")
	if !ok {
		verbosity = "allPlansExecution"
	}
	cmd := bson.D{{Key: "explain", Value: plan.shardCmd}, {Key: "verbosity", Value: verbosity}}
	started := r.clock.Now()
	shards := make([]shardmerge.ShardExplain, len(ts))
	err = r.fanOut(op, len(ts), func(sub *operation, i int) error {
		reply, err := r.sendOK(sub, ts[i], cmd)
		shards[i] = shardmerge.ShardExplain{Shard: ts[i].shard,
			ConnectionString: ts[i].rs.ConnectionString(), Reply: forwardable(reply)}
		return err
	})
	if err != nil {
		return nil, err
	}
	if plan.split != nil {
		return shardmerge.AggregateExplain(plan.split, shards), nil
	}
	millis := r.clock.Now().Sub(started).Milliseconds()
	return shardmerge.ReadExplain(shardmerge.ReadStageName(len(ts), plan.sorted), shards, millis, plan.skip, plan.limit), nil
}

// explainedFilter is the filter an explained command targets shards by.
func explainedFilter(inner bson.D) bson.D {
	switch inner[0].Key {
	case "find":
		return bsonutil.ToD(mustField(inner, "filter"))
	case "count", "distinct":
		return bsonutil.ToD(mustField(inner, "query"))
	case "aggregate":
		return leadingMatch(bsonutil.ToA(mustField(inner, "pipeline")))
	}
	return nil
}

// planExplain is the part of an explained command each of n shards runs.
func planExplain(inner bson.D, n int) (explainPlan, error) {
	cmd := passThrough(inner)
	switch inner[0].Key {
	case "find":
		sort, _ := bsonutil.Field(inner, "sort")
		plan := explainPlan{shardCmd: cmd, sorted: len(bsonutil.ToD(sort)) > 0}
		if n > 1 {
			split, err := shardmerge.SplitFind(cmd, nil)
			if err != nil {
				return plan, err
			}
			plan.shardCmd, plan.skip, plan.limit = split.ShardCommand, intField(inner, "skip"), intField(inner, "limit")
		}
		return plan, nil
	case "count":
		if n == 1 {
			return explainPlan{shardCmd: cmd}, nil
		}
		shardCmd, err := shardmerge.ShardCountCommand(cmd)
		return explainPlan{shardCmd: shardCmd, skip: intField(inner, "skip"), limit: intField(inner, "limit")}, err
	case "distinct":
		return explainPlan{shardCmd: cmd}, nil
	case "aggregate":
		return planAggregateExplain(cmd, n)
	}
	return explainPlan{}, mongoerr.Newf(mongoerr.IllegalOperation, "explain of %s is not supported through mayfly route in this version", inner[0].Key)
}

func planAggregateExplain(cmd bson.D, n int) (explainPlan, error) {
	pipeline := bsonutil.ToA(mustField(cmd, "pipeline"))
	if err := refuseUnsupportedStages(pipeline); err != nil {
		return explainPlan{}, err
	}
	split := &shardmerge.PipelineSplit{}
	for _, s := range pipeline {
		split.ShardPipeline = append(split.ShardPipeline, bsonutil.ToD(s))
	}
	if n > 1 {
		var err error
		if split, err = splitAggregate(pipeline); err != nil {
			return explainPlan{}, err
		}
	}
	return explainPlan{shardCmd: bsonutil.WithField(cmd, "pipeline", stagesA(split.ShardPipeline)), split: split}, nil
}
