package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Change streams through the router, as mongos opens them: an aggregate
// whose pipeline starts with $changeStream opens a stream on every
// shard's primary, all starting at one cluster time, and the router
// merges their events in cluster-time order (changestream_merge.go). The
// resume tokens it hands out name the merged position (mergedToken); a
// resume opens every shard's stream again at the token's time and drops
// what the client has already seen.

// resumeOptions are the $changeStream options that say where a stream
// starts; the router answers them itself.
var resumeOptions = []string{"resumeAfter", "startAfter", "startAtOperationTime"}

// isChangeStreamPipeline reports whether a pipeline starts with
// $changeStream.
func isChangeStreamPipeline(pipeline bson.A) bool {
	return len(pipeline) > 0 && stageName(pipeline[0]) == "$changeStream"
}

// streamStart is where a merged stream begins: the time every shard's
// stream opens at, and the merged position before which their changes
// were already seen.
type streamStart struct {
	at      bson.Timestamp
	seen    mergedToken
	resumed bool // seen is a resume token's position
}

// cmdChangeStream opens a merged change stream and answers with its
// first batch, never waiting, as mongod answers the aggregate.
func cmdChangeStream(r *Router, op *operation, coll string, pipeline bson.A) (bson.D, error) {
	stage, _ := bsonutil.Field(bsonutil.ToD(pipeline[0]), "$changeStream")
	opts, ok := stage.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location50808, "$changeStream stage expects a document as argument")
	}
	if err := r.learnShardTimes(op, opts); err != nil {
		return nil, err
	}
	start, err := r.streamStart(opts)
	if err != nil {
		return nil, err
	}
	if err := checkStreamSpec(op, coll, opts, pipeline); err != nil {
		return nil, err
	}
	shardPipeline := append(bson.A{bson.D{{Key: "$changeStream", Value: shardStreamOptions(opts, start.at)}}}, pipeline[1:]...)
	cmd := bsonutil.WithField(passThrough(op.body), "pipeline", shardPipeline)
	cs, err := r.openShardStreams(op, cmd, start)
	if err != nil {
		return nil, err
	}
	cs.ns = streamNamespace(op.db, coll)
	batch := cs.emit(firstStreamBatch(op.body))
	return r.streamReply(op, cs, "firstBatch", batch), nil
}

// checkStreamSpec checks the stage and the stages after it with mongod's
// errors (changestream.Parse), without the resume options the router
// reads itself.
func checkStreamSpec(op *operation, coll string, opts bson.D, pipeline bson.A) error {
	checked := append(bson.A{bson.D{{Key: "$changeStream", Value: withoutFields(opts, resumeOptions)}}}, pipeline[1:]...)
	_, err := changestream.Parse(op.db, coll, checked, bsonutil.ToD(mustField(op.body, "let")))
	return err
}

// streamStart reads the resume options: a merged token (resumeAfter,
// startAfter), a time (startAtOperationTime), or neither, when the stream
// starts after every change this router has seen.
func (r *Router) streamStart(opts bson.D) (streamStart, error) {
	given := 0
	for _, f := range resumeOptions {
		if _, ok := bsonutil.Field(opts, f); ok {
			given++
		}
	}
	if given > 1 {
		return streamStart{}, mongoerr.New(mongoerr.Location40674, "Only one type of resume option is allowed, but multiple were found.")
	}
	if v, ok := bsonutil.Field(opts, "startAtOperationTime"); ok {
		ts, isTS := v.(bson.Timestamp)
		if !isTS {
			return streamStart{}, mongoerr.WrongType("$changeStream", "startAtOperationTime", v, "timestamp")
		}
		return streamStart{at: ts}, nil
	}
	for _, f := range []string{"resumeAfter", "startAfter"} {
		if v, ok := bsonutil.Field(opts, f); ok {
			tok, err := parseMergedToken(f, v)
			if err != nil {
				return streamStart{}, err
			}
			return streamStart{at: bson.Timestamp{T: tok.pos.TS.T, I: tok.pos.TS.I}, seen: tok, resumed: true}, nil
		}
	}
	return streamStart{at: nextTick(r.time.Now())}, nil
}

// learnShardTimes asks every shard its cluster time before a stream
// that names no start opens: the stream then starts after every write
// any router had acknowledged, not only those this one has seen (another
// router's clients gossip their cluster time to this one unsigned, and it
// trusts none).
func (r *Router) learnShardTimes(op *operation, opts bson.D) error {
	for _, f := range resumeOptions {
		if _, ok := bsonutil.Field(opts, f); ok {
			return nil
		}
	}
	_, _, err := r.eachShard(op, "admin", bson.D{{Key: "ping", Value: 1}})
	return err
}

// nextTick is the cluster time just after t: a new stream starts there,
// after every write the router has acknowledged. The shards are told t
// with the aggregate, so none stamps a later write at t or before.
func nextTick(t bson.Timestamp) bson.Timestamp {
	if t.IsZero() {
		return t
	}
	return bson.Timestamp{T: t.T, I: t.I + 1}
}

// shardStreamOptions are the options each shard's stream opens with: the
// client's, with the start as startAtOperationTime.
func shardStreamOptions(opts bson.D, at bson.Timestamp) bson.D {
	out := withoutFields(opts, resumeOptions)
	if !at.IsZero() {
		out = append(out, bson.E{Key: "startAtOperationTime", Value: at})
	}
	return out
}

func withoutFields(d bson.D, names []string) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		drop := false
		for _, n := range names {
			drop = drop || e.Key == n
		}
		if !drop {
			out = append(out, e)
		}
	}
	return out
}

// streamNamespace is a stream cursor's namespace, as mongod names it: the
// collection, or db.$cmd.aggregate for a database or cluster stream.
func streamNamespace(db, coll string) string {
	if coll == "" {
		return db + ".$cmd.aggregate"
	}
	return db + "." + coll
}

// firstStreamBatch is the aggregate's cursor.batchSize; -1 (no count
// limit) when it names none.
func firstStreamBatch(body bson.D) int64 {
	cursorOpt := bsonutil.ToD(mustField(body, "cursor"))
	v, ok := bsonutil.Field(cursorOpt, "batchSize")
	if !ok {
		return -1
	}
	return toInt64(v)
}

// openShardStreams opens the stream on every shard's primary. A failure
// closes the ones already open.
func (r *Router) openShardStreams(op *operation, cmd bson.D, start streamStart) (*mergedStream, error) {
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, orNoShards(nil)
	}
	cs := &mergedStream{r: r, seen: start.seen, resumed: start.resumed}
	for _, id := range ids {
		rs, err := r.catalog.shard(op, id)
		if err == nil {
			err = cs.open(op, id, rs, cmd)
		}
		if err != nil {
			cs.close(op)
			return nil, err
		}
	}
	return cs, nil
}

// streamReply is a merged stream's cursor reply: its batch, its
// postBatchResumeToken and, while it goes on, the router's cursor.
func (r *Router) streamReply(op *operation, cs *mergedStream, key string, batch bson.A) bson.D {
	var id int64
	if cs.ended {
		cs.close(op) // the other shards' streams have nothing more to give
	} else {
		if cs.cursor == nil {
			cs.cursor = &routerCursor{ns: cs.ns, stream: cs}
			r.register(op, cs.cursor)
		}
		id = cs.cursor.id
	}
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: key, Value: batch},
		{Key: "postBatchResumeToken", Value: cs.pbrt.doc()},
		{Key: "id", Value: id},
		{Key: "ns", Value: cs.ns},
	}}}
}
