package router

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/shardmerge"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// defaultBatchSize is the first batch a find or aggregate answers with
// when the client names none.
const defaultBatchSize = 101

// collectionArg is a command's collection name (its first value).
func collectionArg(op *operation) (string, error) {
	coll, ok := op.body[0].Value.(string)
	if !ok || coll == "" {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.%v'", op.db, op.body[0].Value)
	}
	return coll, nil
}

// readTargets places a read and picks its shards from the filter.
func (r *Router) readTargets(op *operation, ns string, filter bson.D) (placement, []target, error) {
	p, err := r.place(op, ns, false)
	if err != nil {
		return p, nil, err
	}
	var keys []any
	if p.table != nil {
		keys = shardKeyValues(p.table, filter, simpleCollation(op.body))
	}
	ts, err := r.targets(op, p, keys)
	return p, ts, err
}

// commandTargets reads a read command's collection and filter (in the
// field the command names it) and returns its namespace and the shards
// that filter reaches.
func (r *Router) commandTargets(op *operation, filterField string) (string, []target, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return "", nil, err
	}
	ns := op.db + "." + coll
	filter, _ := bsonutil.Field(op.body, filterField)
	_, ts, err := r.readTargets(op, ns, bsonutil.ToD(filter))
	return ns, ts, err
}

// cmdFind sends a find to the one shard its filter pins, or splits it
// (internal/shardmerge) over every shard and merges on the router.
func cmdFind(r *Router, op *operation) (bson.D, error) {
	ns, ts, err := r.commandTargets(op, "filter")
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardCursor(op, ts[0], passThrough(op.body))
	}
	return r.scatterFind(op, ns, ts)
}

// forwardCursor runs a cursor command on one shard and adopts its cursor.
func (r *Router) forwardCursor(op *operation, t target, cmd bson.D) (bson.D, error) {
	reply, err := r.send(op, t, cmd)
	if err != nil {
		return nil, err
	}
	return r.adoptCursor(op, t.rs, reply), nil
}

// scatterFind sends the find internal/shardmerge splits off to every
// target and merges their cursors into a router cursor.
func (r *Router) scatterFind(op *operation, ns string, ts []target) (bson.D, error) {
	collator, err := collatorOf(op.body)
	if err != nil {
		return nil, err
	}
	split, err := shardmerge.SplitFind(passThrough(op.body), collator)
	if err != nil {
		return nil, err
	}
	streams, err := r.openStreams(op, ts, split.ShardCommand)
	if err != nil {
		return nil, err
	}
	single, _ := bsonutil.Field(op.body, "singleBatch")
	return r.firstBatch(op, ns, &mergedCursor{streams: streams, out: split.Merge(iterators(streams))},
		firstBatchSize(op.body), single == true)
}

// firstBatchSize is a find's first batch: batchSize, at most limit,
// defaultBatchSize when neither is given.
func firstBatchSize(body bson.D) int64 {
	n := int64(defaultBatchSize)
	if v, ok := bsonutil.Field(body, "batchSize"); ok {
		n = toInt64(v)
	}
	if limit := intField(body, "limit"); limit > 0 && (n == 0 || limit < n) {
		n = limit
	}
	return n
}

// collatorOf is a command's non-simple collation, nil for the simple one.
func collatorOf(body bson.D) (query.Collator, error) {
	v, _ := bsonutil.Field(body, "collation")
	c, err := collation.Parse(v)
	if err != nil || c == nil {
		return nil, err
	}
	return c, nil
}

func intField(body bson.D, key string) int64 {
	v, _ := bsonutil.Field(body, key)
	return toInt64(v)
}

// appendNumber is a count as mongod's appendNumber writes it: an int
// when it fits, a long otherwise.
func appendNumber(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

// toInt64 reads a number of any BSON numeric type; anything else is 0.
func toInt64(v any) int64 {
	if !bsonutil.IsNumber(v) {
		return 0
	}
	return int64(bsonutil.ToFloat(v))
}

// openStreams sends cmd to every target and opens a stream on each
// reply; a failure kills the cursors already open.
func (r *Router) openStreams(op *operation, ts []target, cmd bson.D) ([]*shardStream, error) {
	streams := make([]*shardStream, len(ts))
	err := r.fanOut(op, len(ts), func(sub *operation, i int) error {
		reply, err := r.sendOK(sub, ts[i], cmd)
		if err == nil {
			streams[i] = r.newShardStream(op, ts[i].rs, reply)
		}
		return err
	})
	if err != nil {
		for _, s := range streams {
			if s != nil {
				_ = s.Close()
			}
		}
		return nil, err
	}
	return streams, nil
}

func iterators(streams []*shardStream) []aggregate.Iterator {
	out := make([]aggregate.Iterator, len(streams))
	for i, s := range streams {
		out[i] = s
	}
	return out
}

// cmdCount sums the shards' counts, with skip and limit applied on the
// router (mongos's cluster count, by internal/shardmerge).
func cmdCount(r *Router, op *operation) (bson.D, error) {
	_, ts, err := r.commandTargets(op, "query")
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardOne(op, ts[0], passThrough(op.body))
	}
	cmd, err := shardmerge.ShardCountCommand(passThrough(op.body))
	if err != nil {
		return nil, err
	}
	counts := make([]shardmerge.ShardCount, len(ts))
	err = r.fanOut(op, len(ts), func(sub *operation, i int) error {
		reply, err := r.sendOK(sub, ts[i], cmd)
		counts[i] = shardmerge.ShardCount{Shard: ts[i].shard, N: toInt64(mustField(reply, "n"))}
		return err
	})
	if err != nil {
		return nil, err
	}
	reply := shardmerge.CountReply(shardmerge.MergeCount(op.body, counts), counts)
	return bsonutil.WithField(reply, "n", appendNumber(toInt64(mustField(reply, "n")))), nil
}

// forwardOne runs a command on one target and answers with its reply.
func (r *Router) forwardOne(op *operation, t target, cmd bson.D) (bson.D, error) {
	reply, err := r.send(op, t, cmd)
	if err != nil {
		return nil, err
	}
	return forwardable(reply), nil
}

// sendOK is send with the reply's error as the error.
func (r *Router) sendOK(op *operation, t target, cmd bson.D) (bson.D, error) {
	reply, err := r.send(op, t, append(bson.D(nil), cmd...))
	if err != nil {
		return nil, err
	}
	return reply, wireclient.MongoError(reply)
}

// cmdDistinct unions the shards' distinct values (internal/shardmerge).
func cmdDistinct(r *Router, op *operation) (bson.D, error) {
	_, ts, err := r.commandTargets(op, "query")
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardOne(op, ts[0], passThrough(op.body))
	}
	collator, err := collatorOf(op.body)
	if err != nil {
		return nil, err
	}
	perShard := make([]bson.A, len(ts))
	err = r.fanOut(op, len(ts), func(sub *operation, i int) error {
		reply, err := r.sendOK(sub, ts[i], passThrough(op.body))
		perShard[i] = bsonutil.ToA(mustField(reply, "values"))
		return err
	})
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "values", Value: shardmerge.MergeDistinct(perShard, collator)}}, nil
}
