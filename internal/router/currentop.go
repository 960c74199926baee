package router

import (
	"context"
	"errors"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/server"
)

// beginOp records a client command among the router's operations in
// flight ($currentOp with localOps), where killOp can stop it; its
// secrets are masked, as mongod's currentOp masks them.
func (r *Router) beginOp(c *server.Conn, cmd *server.Command, began time.Time) int64 {
	entry := activity.Op{Kind: activity.OpKind(cmd.Name), DB: cmd.DB, Command: auth.Redact(cmd.Body), Started: began}
	if c != nil {
		entry.Desc, entry.Client, entry.ConnID = c.Desc(), c.RemoteAddr(), c.ID()
	}
	return r.ops.BeginCancelable(entry, cmd.Cancel) // a nil Cancel (tests) makes it one killOp cannot stop
}

// killedError is the error of a command killOp stopped: whatever its
// shards' requests answered once their connections closed, the client
// gets mongod's Interrupted.
func killedError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	}
	return err
}

// cmdCurrentOp is $currentOp over every shard with the command's filter,
// as mongos's currentOp.
func cmdCurrentOp(r *Router, op *operation) (bson.D, error) {
	spec := bson.D{{Key: "allUsers", Value: true}, {Key: "idleSessions", Value: true}}
	docs, err := r.currentOpDocs(op, spec)
	if err != nil {
		return nil, err
	}
	return activity.InProg(op.body, docs, r.clock.Now())
}

// aggregateCurrentOp runs {aggregate: 1} from $currentOp: the router's
// own operations with localOps, else every shard's, tagged with their
// shard; the rest of the pipeline runs on the router.
func (r *Router) aggregateCurrentOp(op *operation, pipeline bson.A) (bson.D, error) {
	if op.db != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	spec := bsonutil.ToD(bsonutil.ToD(pipeline[0])[0].Value)
	local, _ := bsonutil.Field(spec, "localOps")
	var docs []bson.D
	var err error
	if bsonutil.TrueValue(local) {
		docs = r.ops.Docs(r.clock.Now(), r.cfg.Host)
	} else if docs, err = r.currentOpDocs(op, bsonutil.WithoutField(spec, "localOps")); err != nil {
		return nil, err
	}
	out, err := r.overDocs(pipeline[1:], docs)
	if err != nil {
		return nil, err
	}
	return r.firstBatch(op, "admin.$cmd.aggregate", &mergedCursor{out: out}, aggregateBatchSize(op.body), false)
}

// currentOpDocs asks every shard's primary for $currentOp with spec and
// answers their operations as ShardOp shows them, by shard.
func (r *Router) currentOpDocs(op *operation, spec bson.D) ([]bson.D, error) {
	cmd := bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: spec}}}},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: int32(math.MaxInt32)}}}}
	shards, replies, err := r.eachShard(op, "admin", cmd) // in shard id order, as mongos sorts them
	if err != nil {
		return nil, err
	}
	var docs []bson.D
	for i := range shards {
		rs, err := r.catalog.shard(op, shards[i].ID)
		if err != nil {
			return nil, err
		}
		ops, err := r.drain(op, rs, "admin", "$cmd.aggregate", replies[i])
		if err != nil {
			return nil, err
		}
		for _, d := range ops {
			docs = append(docs, activity.ShardOp(d, shards[i].ID))
		}
	}
	return docs, nil
}

func (r *Router) overDocs(stages bson.A, docs []bson.D) (aggregate.Iterator, error) {
	p, err := aggregate.Parse(stages, aggregate.Options{})
	if err != nil {
		return nil, err
	}
	return p.Run(aggregate.Docs(docs...), routerEnv{clock: r.clock})
}

// cmdKillOp is mongos's killOp: a number stops one of the router's own
// operations, "<shard>:<opid>" is passed to that shard's primary as its
// killOp. Either way it succeeds, as on mongos, whether or not the
// operation was still running.
func cmdKillOp(r *Router, op *operation) (bson.D, error) {
	v, ok := bsonutil.Field(op.body, "op")
	switch s, isString := v.(string); {
	case !ok:
		return nil, mongoerr.New(mongoerr.Location50759, `Did not provide "op" field`)
	case bsonutil.IsNumber(v):
		r.ops.Kill(int64(bsonutil.ToFloat(v)))
		return bson.D{}, nil
	case isString:
		shard, opid, err := activity.ParseShardOpID(s)
		if err != nil {
			return nil, err
		}
		rs, err := r.catalog.shard(op, shard)
		if err != nil {
			return nil, err
		}
		r.log.Info("killing operation", "op", s, "by", clientAddr(op))
		_, _ = r.call(op, rs, "admin", bson.D{{Key: "killOp", Value: int32(1)}, {Key: "op", Value: opid}})
		return bson.D{{Key: "shard", Value: shard}, {Key: "shardid", Value: opid}}, nil
	}
	return nil, mongoerr.Newf(mongoerr.Location50760, `"op" field was of unsupported type %s`, bsonutil.TypeName(v))
}
