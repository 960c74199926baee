package router

import (
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// How a merged stream waits. The router can hand on a shard's event only
// once every other shard's high-water mark (its postBatchResumeToken) has
// passed it, so it hears from every shard before each batch.
const (
	// shardAwaitSlice bounds an idle round's getMores: a shard with
	// nothing new answers after it, so an event from another shard waits
	// at most about this long for the idle shards to answer.
	shardAwaitSlice = 200 * time.Millisecond
	// shardPollWait is a round's wait when the router holds events and
	// only needs the other shards' marks to pass them: each shard takes
	// the router's cluster time, writes a no-op when idle, and answers.
	shardPollWait = time.Millisecond
	// defaultStreamAwait is a getMore's wait without maxTimeMS, mongod's
	// awaitData default.
	defaultStreamAwait = time.Second
)

// mergedStream is a change stream open through the router: one stream
// per shard, merged by cluster time.
type mergedStream struct {
	r      *Router
	ns     string
	shards []*shardFeed
	// seen is the position a resumed stream starts after: the shards'
	// changes up to it were handed out before.
	seen    mergedToken
	resumed bool
	pbrt    mergedToken // the last batch's postBatchResumeToken
	ended   bool        // the invalidate event was handed out
	cursor  *routerCursor
}

// shardFeed is one shard's stream: its cursor, the events read and not
// yet handed out, and how far the shard has answered for.
type shardFeed struct {
	shard string
	rs    *wireclient.ReplicaSet
	db    string
	coll  string // the cursor's collection, for getMore
	id    int64
	held  []heldEvent
	// hwm is the shard's last postBatchResumeToken: it has sent every
	// change at or before it.
	hwm    changestream.Position
	closed bool // the shard's cursor is done (after its invalidate)
}

type heldEvent struct {
	tok mergedToken
	doc bson.D
}

// open runs the aggregate on one shard and takes its first batch.
func (cs *mergedStream) open(op *operation, shard string, rs *wireclient.ReplicaSet, cmd bson.D) error {
	reply, err := cs.r.call(op, rs, op.db, append(bson.D(nil), cmd...))
	if err != nil {
		return err
	}
	if err := wireclient.MongoError(reply); err != nil {
		return err
	}
	f := &shardFeed{shard: shard, rs: rs, db: op.db}
	cs.shards = append(cs.shards, f)
	cur := bsonutil.ToD(mustField(reply, "cursor"))
	ns, _ := bsonutil.Field(cur, "ns")
	nsName, _ := ns.(string)
	_, f.coll = splitNS(nsName)
	return cs.take(f, cur, "firstBatch")
}

// take reads a shard's cursor reply: its events (less those a resumed
// stream has handed out, and a migration's, which streams do not show),
// its high-water mark and whether its cursor goes on.
func (cs *mergedStream) take(f *shardFeed, cur bson.D, key string) error {
	for _, raw := range bsonutil.ToA(mustField(cur, key)) {
		doc := bsonutil.ToD(raw)
		tok, err := shardEventToken(doc, f.shard)
		if err != nil {
			return err
		}
		if cs.resumed && compareMerged(tok, cs.seen) <= 0 || fromMigrate(doc) {
			continue
		}
		f.held = append(f.held, heldEvent{tok: tok, doc: doc})
	}
	pbrt, _ := bsonutil.Field(cur, "postBatchResumeToken")
	if tok, err := shardToken(pbrt); err == nil && tok.Pos.After(f.hwm) {
		f.hwm = tok.Pos
	}
	id, _ := bsonutil.Field(cur, "id")
	f.id, _ = id.(int64)
	f.closed = f.id == 0
	return nil
}

// shardEventToken is the merged token of a shard's event, from its _id.
func shardEventToken(doc bson.D, shard string) (mergedToken, error) {
	id, _ := bsonutil.Field(doc, "_id")
	tok, err := shardToken(id)
	if err != nil {
		return mergedToken{}, mongoerr.Newf(mongoerr.ChangeStreamFatalError, "shard %s sent a change stream event without its resume token: %v", shard, err)
	}
	return mergedToken{pos: tok.Pos, kind: tok.Kind, shard: shard}, nil
}

func shardToken(v any) (changestream.Token, error) {
	data, _ := bsonutil.Field(bsonutil.ToD(v), "_data")
	s, _ := data.(string)
	return changestream.ParseToken(s)
}

// fromMigrate reports an event a chunk migration caused: streams through
// the router do not show them, as mongos's do not.
func fromMigrate(doc bson.D) bool {
	v, _ := bsonutil.Field(doc, "fromMigrate")
	return v == true
}

// emit hands out up to n held events (n < 0: no count limit) in merged
// order, those every shard has answered for, and moves the
// postBatchResumeToken on: to the last event, or, when every event up to
// the shards' common mark is out, to that mark.
func (cs *mergedStream) emit(n int64) bson.A {
	batch := bson.A{}
	if n == 0 {
		return batch
	}
	limit, bounded := cs.limit()
	bytes := 0
	for !cs.ended && (n < 0 || int64(len(batch)) < n) {
		f := cs.nextFeed()
		if f == nil || bounded && f.held[0].tok.pos.After(limit) {
			cs.markPassed(limit, bounded)
			break
		}
		ev := f.held[0]
		doc := bsonutil.WithField(ev.doc, "_id", ev.tok.doc())
		size := docSize(doc)
		if len(batch) > 0 && bytes+size > maxBatchBytes {
			break
		}
		f.held = f.held[1:]
		bytes += size
		batch = append(batch, doc)
		cs.advance(ev.tok)
		cs.ended = ev.tok.kind == changestream.KindInvalidate
	}
	return batch
}

// markPassed moves the postBatchResumeToken to the shards' common mark.
// Once every shard's cursor is done and nothing is held, the stream has
// ended.
func (cs *mergedStream) markPassed(limit changestream.Position, bounded bool) {
	if !bounded {
		cs.ended = true
		return
	}
	cs.advance(mergedToken{pos: limit})
}

func (cs *mergedStream) advance(tok mergedToken) {
	if compareMerged(tok, cs.pbrt) > 0 {
		cs.pbrt = tok
	}
}

// limit is the lowest high-water mark of the shards whose cursors go on:
// no shard can send a change at or before it any more. bounded is false
// when every shard's cursor is done.
func (cs *mergedStream) limit() (changestream.Position, bool) {
	var low changestream.Position
	bounded := false
	for _, f := range cs.shards {
		if f.closed {
			continue
		}
		if !bounded || low.After(f.hwm) {
			low, bounded = f.hwm, true
		}
	}
	return low, bounded
}

// nextFeed is the shard whose first held event comes first in merged
// order; nil when nothing is held.
func (cs *mergedStream) nextFeed() *shardFeed {
	var best *shardFeed
	for _, f := range cs.shards {
		if len(f.held) > 0 && (best == nil || compareMerged(f.held[0].tok, best.held[0].tok) < 0) {
			best = f
		}
	}
	return best
}

func (cs *mergedStream) holding() bool {
	for _, f := range cs.shards {
		if len(f.held) > 0 {
			return true
		}
	}
	return false
}

// close kills the shards' cursors.
func (cs *mergedStream) close(op *operation) {
	for _, f := range cs.shards {
		if f.id != 0 {
			killOne(op, f.rs, f.db, f.coll, f.id)
			f.id = 0
		}
	}
}

// streamGetMore continues a merged stream: events every shard has
// answered for, or, when there are none, the first to come within the
// getMore's wait, reading the shards in rounds.
func (r *Router) streamGetMore(op *operation, c *routerCursor) (bson.D, error) {
	cs := c.stream
	n := intField(op.body, "batchSize")
	if n <= 0 {
		n = -1
	}
	deadline := r.clock.Now().Add(streamAwait(op.body))
	progressed := true
	for {
		batch := cs.emit(n)
		remaining := deadline.Sub(r.clock.Now())
		if len(batch) > 0 || cs.ended || remaining <= 0 {
			return r.streamReply(op, cs, "nextBatch", batch), nil
		}
		wait := min(remaining, shardAwaitSlice)
		if cs.holding() && progressed {
			wait = shardPollWait
		}
		before := cs.pbrtCandidate()
		if err := cs.fetch(op, wait); err != nil {
			return nil, changestream.ResumableError(err)
		}
		progressed = cs.pbrtCandidate() != before
	}
}

// pbrtCandidate is what a round may move: the shards' common mark.
func (cs *mergedStream) pbrtCandidate() changestream.Position {
	low, _ := cs.limit()
	return low
}

// streamAwait is how long a getMore waits for an event: its maxTimeMS,
// or mongod's default for awaitData cursors.
func streamAwait(body bson.D) time.Duration {
	if ms := intField(body, "maxTimeMS"); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return defaultStreamAwait
}

// fetch runs one round: a getMore on every shard whose cursor goes on,
// all at once, each waiting at most wait for a change, with the router's
// cluster time, which moves an idle shard's mark past it.
func (cs *mergedStream) fetch(op *operation, wait time.Duration) error {
	open := make([]*shardFeed, 0, len(cs.shards))
	for _, f := range cs.shards {
		if !f.closed {
			open = append(open, f)
		}
	}
	replies := make([]bson.D, len(open))
	errs := make([]error, len(open))
	var wg sync.WaitGroup
	for i, f := range open {
		cmd := bson.D{{Key: "getMore", Value: f.id}, {Key: "collection", Value: f.coll},
			{Key: "maxTimeMS", Value: max(wait.Milliseconds(), 1)}}
		if lsid, ok := bsonutil.Field(op.body, "lsid"); ok {
			cmd = append(cmd, bson.E{Key: "lsid", Value: lsid}) // the shard's cursor is the session's
		}
		cmd = cs.r.withClusterTime(cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = f.rs.Run(op.ctx, f.db, cmd)
		}()
	}
	wg.Wait()
	for i, f := range open {
		if err := cs.takeReply(op, f, replies[i], errs[i]); err != nil {
			cs.close(op)
			return err
		}
	}
	return nil
}

func (cs *mergedStream) takeReply(op *operation, f *shardFeed, reply bson.D, err error) error {
	if err != nil {
		return err
	}
	cs.r.observeReply(op, reply)
	if err := wireclient.MongoError(reply); err != nil {
		f.id = 0 // a failed getMore leaves no cursor on the shard
		return err
	}
	return cs.take(f, bsonutil.ToD(mustField(reply, "cursor")), "nextBatch")
}
