package changestream

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Stream is an open change stream: its position in the change log
// and what it turns changes into.
type Stream struct {
	streams *Streams
	spec    *Spec
	pos     Position // the last change looked at (or a high-water mark)
	// pbrt is the last batch's postBatchResumeToken: the token of its
	// last event, or, for an empty batch, of where the scan got to.
	pbrt Token
	// ended is set once the stream returned its invalidate event.
	ended bool
	// optsKey is cacheKey's answer for the changes it caches.
	optsKey string
	// joined: the stream is counted in the shared RecentLog (open as a
	// cursor), until Close.
	joined bool
	memo   probeMemo // the pushed-down $match's last answer
	// one holds the event encodedEvents returns alone (single).
	one [1][]byte
	// lastBatch is the length of the last batch read, to size the next.
	lastBatch int
}

// Next implements cursor.Source; change streams are read by Read and
// Await.
func (c *Stream) Next() (bson.D, bool, error) { return nil, false, nil }

// Close implements cursor.Source: the registry calls it once, when the
// cursor is removed, reaped or closed at shutdown.
func (c *Stream) Close() error {
	if c.joined {
		c.joined = false
		c.streams.recent.Leave()
	}
	return nil
}

// Join counts the stream into the shared RecentLog, which keeps its ring
// of shared records while two or more streams are open. A stream joins
// once it is a cursor; Close counts it out.
func (c *Stream) Join() {
	c.joined = true
	c.streams.recent.Join()
}

const (
	// streamScanLimit bounds the changes one batch looks at, so that a
	// stream whose filter skips a storm of other changes still answers
	// promptly (its postBatchResumeToken moves on).
	streamScanLimit = 10000
	// streamBatchBytes ends a batch early so one reply stays well under
	// 16 MiB.
	streamBatchBytes = 8 << 20
)

// Read fills a batch of up to n events (n < 0: no count limit) from the
// changes after c.pos, without waiting.
func (c *Stream) Read(call *Call, n int64) ([]bson.Raw, error) {
	batch := make([]bson.Raw, 0, max(c.lastBatch, 8))
	if n == 0 {
		return batch, nil
	}
	if catchUp := c.streams.feed.CatchUp; catchUp != nil {
		catchUp(call.Ctx)
	}
	hwm, err := c.streams.feed.Now() // before the scan: everything up to it is in the log
	if err != nil {
		return nil, err
	}
	size, scanned, stopped := 0, 0, false
	err = c.streams.recent.Read(c.pos, hwm, func(rec Record) (bool, error) {
		docs, err := c.encodedEvents(call, rec)
		if err != nil {
			return false, err
		}
		c.pos = rec.Pos
		if len(docs) > 0 {
			c.pbrt = Token{Pos: rec.Pos, Kind: c.lastKind()}
		}
		for _, raw := range docs {
			batch = append(batch, bson.Raw(raw))
			size += len(raw)
		}
		scanned++
		stopped = c.ended || n > 0 && int64(len(batch)) >= n || size >= streamBatchBytes || scanned >= streamScanLimit
		return !stopped, nil
	})
	if err != nil {
		return nil, err
	}
	if !stopped && hwm.After(c.pos) {
		c.pos = hwm
	}
	if len(batch) == 0 {
		c.pbrt = Token{Pos: c.pos}
	}
	c.lastBatch = len(batch)
	return batch, nil
}

// lastKind is the token kind of the stream's last event.
func (c *Stream) lastKind() byte {
	if c.ended {
		return KindInvalidate
	}
	return KindEvent
}

// events turns one change in the stream's scope into the events the
// stream returns: the change's event, and the invalidate event after a
// change that ends the stream; each through the stream's pipeline. The
// caller has tested a pushed-down $match on any other change; here it
// runs on the built events of one that ends the stream.
func (c *Stream) events(call *Call, rec Record) ([]bson.D, error) {
	doc, err := c.eventDoc(rec)
	if err != nil {
		return nil, err
	}
	docs := []bson.D{doc}
	if c.spec.Scope.invalidatedBy(rec.Event) {
		c.ended = true
		if docs, err = c.spec.matching(append(docs, invalidateDoc(rec))); err != nil {
			return nil, err
		}
	}
	return c.runPipeline(call, docs)
}

// runPipeline passes events through the stages after $changeStream; an
// event whose _id (its resume token) a stage changed ends the stream, as
// on mongod.
func (c *Stream) runPipeline(call *Call, docs []bson.D) ([]bson.D, error) {
	if c.spec.Pipeline == nil {
		return docs, nil
	}
	var out []bson.D
	for _, d := range docs {
		it, err := c.spec.Pipeline.Run(&oneEvent{doc: d}, call.Env)
		if err != nil {
			return nil, err
		}
		res, err := collectAll(it)
		if err != nil {
			return nil, err
		}
		for _, o := range res {
			if err := checkTokenKept(d, o); err != nil {
				return nil, err
			}
		}
		out = append(out, res...)
	}
	return out, nil
}

func collectAll(it cursor.Source) ([]bson.D, error) {
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, d)
	}
}

func checkTokenKept(in, out bson.D) error {
	a, _ := bsonutil.Field(in, "_id")
	b, ok := bsonutil.Field(out, "_id")
	if ok && bsonutil.Compare(a, b) == 0 {
		return nil
	}
	return mongoerr.Newf(mongoerr.ChangeStreamFatalError, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed. Output: %s", bsonutil.Format(out))
}

// Ended reports whether the stream has returned its invalidate event: it
// reads nothing more.
func (c *Stream) Ended() bool { return c.ended }

// ResumeToken is the last batch's postBatchResumeToken: the token of its
// last event, or, for an empty batch, of where the scan got to.
func (c *Stream) ResumeToken() Token { return c.pbrt }

// oneEvent is the input of the stages after $changeStream: one event.
type oneEvent struct {
	doc  bson.D
	done bool
}

func (o *oneEvent) Next() (bson.D, bool, error) {
	if o.done {
		return nil, false, nil
	}
	o.done = true
	return o.doc, true, nil
}

func (o *oneEvent) Close() error { return nil }

// A Stream is a cursor the registry holds; one event is the input of the
// stages after $changeStream.
var (
	_ cursor.Source      = (*Stream)(nil)
	_ aggregate.Iterator = (*oneEvent)(nil)
)
