package router

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
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

// cmdFind sends a find to the one shard its filter pins, or to every
// shard with skip folded into limit, merging on the router.
func cmdFind(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	filter, _ := bsonutil.Field(op.body, "filter")
	_, ts, err := r.readTargets(op, ns, bsonutil.ToD(filter))
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

// findPlan is what the router does after merging a scattered find.
type findPlan struct {
	sort        *query.Sort
	skip, limit int64
	projection  *query.Projection
	batchSize   int64
	single      bool
}

func parseFindPlan(body bson.D) (findPlan, error) {
	var p findPlan
	if v, ok := bsonutil.Field(body, "sort"); ok && len(bsonutil.ToD(v)) > 0 {
		s, err := query.NewSort(bsonutil.ToD(v))
		if err != nil {
			return p, err
		}
		p.sort = s
	}
	if v, ok := bsonutil.Field(body, "projection"); ok && len(bsonutil.ToD(v)) > 0 {
		proj, err := query.NewProjection(bsonutil.ToD(v))
		if err != nil {
			return p, err
		}
		p.projection = proj
	}
	p.skip = intField(body, "skip")
	p.limit = intField(body, "limit")
	p.batchSize = defaultBatchSize
	if v, ok := bsonutil.Field(body, "batchSize"); ok {
		p.batchSize = toInt64(v)
	}
	single, _ := bsonutil.Field(body, "singleBatch")
	p.single = single == true
	if p.limit > 0 && (p.batchSize == 0 || p.limit < p.batchSize) {
		p.batchSize = p.limit
	}
	return p, nil
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

// shardFind is the find each shard runs: no skip, limit+skip, and, when
// the router sorts, whole documents (the router projects after sorting).
func shardFind(body bson.D, p findPlan) bson.D {
	cmd := passThrough(body)
	cmd = bsonutil.WithoutField(cmd, "skip")
	cmd = bsonutil.WithoutField(cmd, "limit")
	cmd = bsonutil.WithoutField(cmd, "singleBatch")
	if p.limit > 0 {
		cmd = append(cmd, bson.E{Key: "limit", Value: p.limit + p.skip})
	}
	if p.sort != nil {
		cmd = bsonutil.WithoutField(cmd, "projection")
	}
	return cmd
}

func (r *Router) scatterFind(op *operation, ns string, ts []target) (bson.D, error) {
	plan, err := parseFindPlan(op.body)
	if err != nil {
		return nil, err
	}
	streams, err := r.openStreams(op, ts, shardFind(op.body, plan))
	if err != nil {
		return nil, err
	}
	out := r.merger.Merge(iterators(streams), plan.sort)
	out = aggregate.Skip(out, plan.skip)
	if plan.limit > 0 {
		out = aggregate.Limit(out, plan.limit)
	}
	if plan.projection != nil && plan.sort != nil {
		proj := plan.projection
		out = &mapIter{in: out, f: func(d bson.D) (bson.D, error) { return proj.Apply(d, -1) }}
	}
	return r.firstBatch(op, ns, &mergedCursor{streams: streams, out: out}, plan.batchSize, plan.single)
}

// openStreams sends cmd to every target and opens a stream on each
// reply; a failure kills the cursors already open.
func (r *Router) openStreams(op *operation, ts []target, cmd bson.D) ([]*shardStream, error) {
	streams := make([]*shardStream, 0, len(ts))
	for _, t := range ts {
		reply, err := r.send(op, t, append(bson.D(nil), cmd...))
		if err == nil {
			err = replyError(reply)
		}
		if err != nil {
			for _, s := range streams {
				_ = s.Close()
			}
			return nil, err
		}
		streams = append(streams, r.newShardStream(op, t.rs, reply))
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
// router (mongos's cluster count).
func cmdCount(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	filter, _ := bsonutil.Field(op.body, "query")
	_, ts, err := r.readTargets(op, ns, bsonutil.ToD(filter))
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardOne(op, ts[0], passThrough(op.body))
	}
	skip, limit := intField(op.body, "skip"), intField(op.body, "limit")
	if limit < 0 {
		limit = -limit
	}
	cmd := bsonutil.WithoutField(bsonutil.WithoutField(passThrough(op.body), "skip"), "limit")
	if limit > 0 {
		cmd = append(cmd, bson.E{Key: "limit", Value: limit + skip})
	}
	var n int64
	for _, t := range ts {
		reply, err := r.sendOK(op, t, cmd)
		if err != nil {
			return nil, err
		}
		n += toInt64(mustField(reply, "n"))
	}
	n = max(n-skip, 0)
	if limit > 0 {
		n = min(n, limit)
	}
	return bson.D{{Key: "n", Value: appendNumber(n)}}, nil
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
	return reply, replyError(reply)
}

// cmdDistinct unions the shards' distinct values.
func cmdDistinct(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	filter, _ := bsonutil.Field(op.body, "query")
	_, ts, err := r.readTargets(op, ns, bsonutil.ToD(filter))
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 {
		return r.forwardOne(op, ts[0], passThrough(op.body))
	}
	var values []any
	for _, t := range ts {
		reply, err := r.sendOK(op, t, passThrough(op.body))
		if err != nil {
			return nil, err
		}
		values = append(values, bsonutil.ToA(mustField(reply, "values"))...)
	}
	return bson.D{{Key: "values", Value: uniqueValues(values)}}, nil
}

// uniqueValues sorts values in BSON order and drops repeats.
func uniqueValues(values []any) bson.A {
	slices.SortFunc(values, bsonutil.Compare)
	out := bson.A{}
	for i, v := range values {
		if i == 0 || bsonutil.Compare(values[i-1], v) != 0 {
			out = append(out, v)
		}
	}
	return out
}
