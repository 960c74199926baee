package commands

import (
	"errors"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// streamCursor is an open change stream: its position in the change log
// and what it turns changes into.
type streamCursor struct {
	h    *Handler
	spec *streamSpec
	pos  changestream.Position // the last change looked at (or a high-water mark)
	// pbrt is the last batch's postBatchResumeToken: the token of its
	// last event, or, for an empty batch, of where the scan got to.
	pbrt changestream.Token
	lsid []byte
	// ended is set once the stream returned its invalidate event.
	ended bool
	// optsKey is cacheKey's answer for the changes it caches.
	optsKey string
	// joined: the stream is counted in the handler's tail (open as a
	// cursor), until Close.
	joined bool
	memo   probeMemo // the pushed-down $match's last answer
	// one holds the event encodedEvents returns alone (single).
	one [1][]byte
	// lastBatch is the length of the last batch read, to size the next.
	lastBatch int
}

// Next implements cursor.Source; change streams are read by read.
func (c *streamCursor) Next() (bson.D, bool, error) { return nil, false, nil }

// Close implements cursor.Source: the registry calls it once, when the
// cursor is removed, reaped or closed at shutdown.
func (c *streamCursor) Close() error {
	if c.joined {
		c.joined = false
		c.h.tail.Leave()
	}
	return nil
}

// join counts the stream into the handler's tail, which keeps its ring
// of shared records while two or more streams are open.
func (c *streamCursor) join() {
	c.joined = true
	c.h.tail.Join()
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

// read fills a batch of up to n events (n < 0: no count limit) from the
// changes after c.pos, without waiting.
func (c *streamCursor) read(r *request, n int64) ([]bson.Raw, error) {
	batch := make([]bson.Raw, 0, max(c.lastBatch, 8))
	if n == 0 {
		return batch, nil
	}
	feed := c.h.deps.Changes
	hwm, err := feed.Now() // before the scan: everything up to it is in the log
	if err != nil {
		return nil, err
	}
	size, scanned, stopped := 0, 0, false
	err = c.h.tail.Read(c.pos, hwm, func(rec changestream.Record) (bool, error) {
		docs, err := c.encodedEvents(r, rec)
		if err != nil {
			return false, err
		}
		c.pos = rec.Pos
		if len(docs) > 0 {
			c.pbrt = changestream.Token{Pos: rec.Pos, Kind: c.lastKind()}
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
		c.pbrt = changestream.Token{Pos: c.pos}
	}
	c.lastBatch = len(batch)
	return batch, nil
}

// lastKind is the token kind of the stream's last event.
func (c *streamCursor) lastKind() byte {
	if c.ended {
		return changestream.KindInvalidate
	}
	return changestream.KindEvent
}

// reply is a change stream's cursor reply, with postBatchResumeToken.
func (c *streamCursor) reply(id int64, ns, key string, batch []bson.Raw) bson.D {
	tok := c.pbrt
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: key, Value: batch},
		{Key: "postBatchResumeToken", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		{Key: "id", Value: id},
		{Key: "ns", Value: ns},
	}}}
}

// events turns one change in the stream's scope into the events the
// stream returns: the change's event, and the invalidate event after a
// change that ends the stream; each through the stream's pipeline. The
// caller has tested a pushed-down $match on any other change; here it
// runs on the built events of one that ends the stream.
func (c *streamCursor) events(r *request, rec changestream.Record) ([]bson.D, error) {
	doc, err := c.eventDoc(rec)
	if err != nil {
		return nil, err
	}
	docs := []bson.D{doc}
	if c.spec.scope.invalidatedBy(rec.Event) {
		c.ended = true
		if docs, err = c.spec.matching(append(docs, invalidateDoc(rec))); err != nil {
			return nil, err
		}
	}
	return c.runPipeline(r, docs)
}

// covers reports whether the stream reports a change: in its scope, and,
// for a DDL event, asked for with showExpandedEvents. As on mongod, a
// view's or a time-series collection's events (writes to system.views
// there, and the buckets collection's drop, a system one) reach only
// database and cluster streams with showExpandedEvents: a stream
// without the option sees none of them, not even the drop.
func (s *streamSpec) covers(ev *changestream.Event) bool {
	switch {
	case ev.Op.Expanded() && !s.expanded:
		return false
	case ev.View() && (!s.expanded || s.scope.coll != ""):
		return false
	}
	return s.scope.covers(ev)
}

// covers reports whether a change belongs to the stream: system
// collections and the internal databases are never reported. A rename
// belongs to the streams of its source and of its target: mongod's
// filter takes a rename whose 'to' is the watched namespace (the target,
// overwritten or new, is renamed into), and a stream on the target
// collection sees the rename, then its invalidate.
func (s streamScope) covers(ev *changestream.Event) bool {
	if strings.HasPrefix(ev.Coll, "system.") {
		return false
	}
	switch {
	case s.cluster:
		return ev.DB != "admin" && ev.DB != "config" && ev.DB != "local"
	case s.coll == "":
		return ev.DB == s.db || (ev.Op == changestream.OpRename && ev.ToDB == s.db)
	}
	return (ev.DB == s.db && ev.Coll == s.coll) ||
		(ev.Op == changestream.OpRename && ev.ToDB == s.db && ev.ToColl == s.coll)
}

// invalidatedBy reports whether a change the stream covers ends it: the
// drop of a watched collection, a rename from or to it, the drop of a
// watched database.
func (s streamScope) invalidatedBy(ev *changestream.Event) bool {
	switch {
	case s.cluster:
		return false
	case s.coll == "":
		return ev.Op == changestream.OpDropDatabase
	}
	return ev.Op == changestream.OpDrop || ev.Op == changestream.OpRename
}

func invalidateDoc(rec changestream.Record) bson.D {
	tok := changestream.Token{Pos: rec.Pos, Kind: changestream.KindInvalidate}
	return bson.D{
		{Key: "_id", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		{Key: "operationType", Value: "invalidate"},
		{Key: "clusterTime", Value: bson.Timestamp{T: rec.Pos.TS.T, I: rec.Pos.TS.I}},
		{Key: "wallTime", Value: bson.DateTime(rec.WallMillis)},
	}
}

// eventDoc is the change event as mongod shapes it.
func (c *streamCursor) eventDoc(rec changestream.Record) (bson.D, error) {
	ev := rec.Event
	tok := changestream.Token{Pos: rec.Pos}
	d := bson.D{
		{Key: "_id", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		{Key: "operationType", Value: ev.Op.String()},
		{Key: "clusterTime", Value: bson.Timestamp{T: rec.Pos.TS.T, I: rec.Pos.TS.I}},
	}
	if c.spec.expanded && len(ev.UUID) > 0 {
		d = append(d, bson.E{Key: "collectionUUID", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: ev.UUID}})
	}
	d = append(d, bson.E{Key: "wallTime", Value: bson.DateTime(rec.WallMillis)})
	full, err := decodeRaw(ev.Doc)
	if err != nil {
		return nil, err
	}
	if d, err = c.addImages(d, ev, full); err != nil {
		return nil, err
	}
	d = append(d, bson.E{Key: "ns", Value: nsDoc(ev.DB, ev.Coll)})
	if ev.Op <= changestream.OpDelete || ev.Op == changestream.OpExpiring {
		id, err := eventID(ev, full)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: "documentKey", Value: bson.D{{Key: "_id", Value: id}}})
	}
	if c.spec.expanded {
		return appendExpanded(d, ev)
	}
	return appendDetails(d, ev, false)
}

// appendExpanded adds the details of an event as a stream with
// showExpandedEvents reports it, in mongod's order: operationDescription,
// the details every stream gets, stateBeforeChange, nsType (a create's).
func appendExpanded(d bson.D, ev *changestream.Event) (bson.D, error) {
	desc, err := decodeRaw(ev.Desc)
	if err != nil {
		return nil, err
	}
	if desc != nil {
		d = append(d, bson.E{Key: "operationDescription", Value: desc})
	}
	if d, err = appendDetails(d, ev, true); err != nil {
		return nil, err
	}
	before, err := decodeRaw(ev.Before)
	if err != nil {
		return nil, err
	}
	if before != nil {
		d = append(d, bson.E{Key: "stateBeforeChange", Value: before})
	}
	if ev.Op == changestream.OpCreate {
		d = append(d, bson.E{Key: "nsType", Value: ev.NsType})
	}
	return d, nil
}

// appendDetails adds what only some operations have; expanded is the
// stream's showExpandedEvents.
func appendDetails(d bson.D, ev *changestream.Event, expanded bool) (bson.D, error) {
	switch {
	case ev.Op == changestream.OpUpdate:
		upd, err := decodeRaw(ev.Update)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: "updateDescription", Value: disambiguated(upd, expanded)})
		if ev.Elements != nil {
			d = append(d, bson.E{Key: "expiredElements", Value: bson.D{
				{Key: "index", Value: ev.Elements.Index},
				{Key: "expireAfterSeconds", Value: ev.Elements.AfterSecs},
			}})
		}
	case ev.Op == changestream.OpRename:
		d = append(d, bson.E{Key: "to", Value: nsDoc(ev.ToDB, ev.ToColl)})
	case ev.Op == changestream.OpExpiring:
		d = append(d, bson.E{Key: "expiring", Value: bson.D{
			{Key: "index", Value: ev.Expired.Index},
			{Key: "expireAfterSeconds", Value: ev.Expired.AfterSecs},
			{Key: "expiresAt", Value: bson.DateTime(ev.Expired.AtMillis)},
		}})
	case ev.Expired != nil:
		exp, _ := expiredDoc(ev)
		d = append(d, bson.E{Key: "expired", Value: exp})
	case ev.Evicted != nil:
		d = append(d, bson.E{Key: "evicted", Value: bson.D{{Key: "index", Value: ev.Evicted.Index}}})
	}
	return d, nil
}

// disambiguated gives an updateDescription the disambiguatedPaths field
// as the stream reports it: with showExpandedEvents always ({} when no
// path is ambiguous), without it never.
func disambiguated(upd bson.D, expanded bool) bson.D {
	n := len(upd)
	if n > 0 && upd[n-1].Key == changestream.DisambiguatedPaths {
		if expanded {
			return upd
		}
		return upd[:n-1]
	}
	if expanded {
		return append(upd, bson.E{Key: changestream.DisambiguatedPaths, Value: bson.D{}})
	}
	return upd
}

// expiredDoc is a TTL deletion's expired field (ok false: the change is
// no TTL deletion).
func expiredDoc(ev *changestream.Event) (bson.D, bool) {
	if !carriesExpired(ev) {
		return nil, false
	}
	return bson.D{
		{Key: "index", Value: ev.Expired.Index},
		{Key: "expireAfterSeconds", Value: ev.Expired.AfterSecs},
		{Key: "expiredAt", Value: bson.DateTime(ev.Expired.AtMillis)},
	}, true
}

// carriesExpired reports whether the change's event has the expired
// field: a delete by the TTL monitor.
func carriesExpired(ev *changestream.Event) bool {
	return ev.Expired != nil && ev.Op == changestream.OpDelete
}

func nsDoc(db, coll string) bson.D {
	if coll == "" {
		return bson.D{{Key: "db", Value: db}}
	}
	return bson.D{{Key: "db", Value: db}, {Key: "coll", Value: coll}}
}

// eventID is the changed document's _id: from the event's copy of the
// document when it has one, else the event's own (Event.DocumentID).
func eventID(ev *changestream.Event, full bson.D) (any, error) {
	if id, ok := bsonutil.Field(full, "_id"); ok {
		return id, nil
	}
	return ev.DocumentID()
}

func decodeRaw(raw []byte) (bson.D, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return bsonutil.DecodeD(raw, 0)
}

// addImages adds fullDocument and fullDocumentBeforeChange as the
// stream's modes ask.
func (c *streamCursor) addImages(d bson.D, ev *changestream.Event, full bson.D) (bson.D, error) {
	if ev.Op > changestream.OpDelete {
		return d, nil
	}
	if ev.Op == changestream.OpUpdate {
		post, err := c.postImage(ev, full, d)
		if err != nil {
			return nil, err
		}
		if c.spec.fullDocument != "default" {
			d = append(d, bson.E{Key: "fullDocument", Value: post})
		}
	} else if ev.Op != changestream.OpDelete {
		d = append(d, bson.E{Key: "fullDocument", Value: full})
	}
	if c.spec.before == "off" || ev.Op == changestream.OpInsert {
		return d, nil
	}
	pre, err := decodeRaw(ev.Pre)
	if err != nil {
		return nil, err
	}
	if pre == nil && c.spec.before == "required" {
		return nil, mongoerr.Newf(mongoerr.NoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", bsonutil.Format(d))
	}
	return append(d, bson.E{Key: "fullDocumentBeforeChange", Value: orNull(pre)}), nil
}

// postImage is an update's fullDocument: the current document for
// updateLookup, the stored post-image for whenAvailable and required.
func (c *streamCursor) postImage(ev *changestream.Event, stored, event bson.D) (any, error) {
	switch c.spec.fullDocument {
	case "updateLookup":
		return c.lookupCurrent(ev)
	case "required":
		if stored == nil {
			return nil, mongoerr.Newf(mongoerr.NoMatchingDocument, "Change stream was configured to require a post-image for all update, delete and replace events, but the post-image was not found for event: %s", bsonutil.Format(event))
		}
	}
	return orNull(stored), nil
}

// lookupCurrent reads the document an update changed as it is now (null
// when it is gone or expired), as updateLookup does on mongod.
func (c *streamCursor) lookupCurrent(ev *changestream.Event) (any, error) {
	coll := c.h.deps.Store.Collection(ev.DB, ev.Coll)
	if coll == nil {
		return nil, nil
	}
	id, err := eventID(ev, nil)
	if err != nil {
		return nil, err
	}
	f, err := query.NewFilter(bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return nil, err
	}
	plan, err := coll.PlanQuery(f, nil)
	if err != nil {
		return nil, err
	}
	it := coll.Scan(plan, f)
	defer it.Close()
	doc, ok, err := it.Next()
	if err != nil || !ok {
		return nil, err
	}
	return doc, nil
}

func orNull(d bson.D) any {
	if d == nil {
		return nil
	}
	return d
}

// runPipeline passes events through the stages after $changeStream; an
// event whose _id (its resume token) a stage changed ends the stream, as
// on mongod.
func (c *streamCursor) runPipeline(r *request, docs []bson.D) ([]bson.D, error) {
	if c.spec.pipeline == nil {
		return docs, nil
	}
	var out []bson.D
	for _, d := range docs {
		it, err := c.spec.pipeline.Run(&sliceSource{docs: []bson.D{d}}, newAggEnv(c.h, r, ""))
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

// streamGetMore continues a change stream: the changes since the last
// batch, or, when there are none, the first to come within the wait.
func (h *Handler) streamGetMore(r *request, c *cursor.Cursor, sc *streamCursor, n int64) (bson.D, error) {
	if err := checkSession(r, c.ID, &peekSource{lsid: sc.lsid}); err != nil {
		h.deps.Cursors.Checkin(c)
		return nil, err
	}
	docs, err := sc.await(r, n)
	if err != nil {
		h.deps.Cursors.Remove(c.ID)
		return nil, resumableStreamError(err)
	}
	id := c.ID
	if sc.ended {
		h.deps.Cursors.Remove(c.ID)
		id = 0
	} else {
		h.deps.Cursors.Checkin(c)
	}
	return sc.reply(id, c.NS, "nextBatch", docs), nil
}

// await reads a batch; an empty one waits for the next commit, up to the
// getMore's maxTimeMS (1 s by default), and reads again, and a short one
// behind a steady flow may gather more (gather). The wait is one
// timer, never a deadline on the clock: the clock may be set back (the
// test clock, or the system's) and would stretch the wait by as much.
func (c *streamCursor) await(r *request, n int64) ([]bson.Raw, error) {
	t := c.h.deps.Clock.NewTimer(awaitWait(r))
	defer t.Stop()
	steady := c.lastBatch > 0 // the stream's last batch had events
	for {
		changed := c.h.deps.Changes.Signal.Wait() // before the read: no commit slips between
		docs, err := c.read(r, n)
		if err != nil || c.ended {
			return docs, err
		}
		if len(docs) > 0 {
			if steady && worthGathering(docs, n) {
				return c.gather(r, n, docs, t)
			}
			return docs, nil
		}
		if timedOut := c.waitChange(r, changed, t); timedOut {
			return c.read(r, n)
		}
		if r.ctx.Err() != nil {
			return docs, nil
		}
	}
}

// worthGathering reports whether a batch of a stream behind a steady flow
// is short enough to wait on: at least gatherFrom events and fewer than
// gatherFull, under the getMore's batchSize n and under gatherBytes. A
// trickle, or a stream catching up on a backlog, is answered at once.
func worthGathering(docs []bson.Raw, n int64) bool {
	short := len(docs) >= gatherFrom && len(docs) < gatherFull && (n <= 0 || int64(len(docs)) < n)
	return short && rawBytes(docs) < gatherBytes
}

// gather lets a stream that is behind a steady flow of changes (its last
// batch had events too) take them in fewer, bigger batches: it waits
// gatherWait, never past the getMore's own wait, and reads on. Each
// getMore costs the server and the consumer a round trip whatever it
// carries; ten streams on a busy server made one every 50 changes, and
// three times fewer once gathered.
func (c *streamCursor) gather(r *request, n int64, docs []bson.Raw, wait clock.Timer) ([]bson.Raw, error) {
	if !c.pause(r, wait) {
		return docs, nil
	}
	rest := n
	if n > 0 {
		rest = n - int64(len(docs))
	}
	more, err := c.read(r, rest)
	if err != nil {
		return nil, err
	}
	c.lastBatch = len(docs) + len(more)
	return append(docs, more...), nil
}

// pause waits gatherWait, as a waiting operation; it reports false when
// the request ended first.
func (c *streamCursor) pause(r *request, wait clock.Timer) bool {
	defer c.h.waiting(r)()
	t := c.h.deps.Clock.NewTimer(gatherWait)
	defer t.Stop()
	select {
	case <-t.C():
	case <-wait.C():
	case <-r.ctx.Done():
		return false
	}
	return true
}

// rawBytes is the size of a batch's events.
func rawBytes(docs []bson.Raw) int {
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	return n
}

// The bounds of gather: a batch of at least gatherFrom events and under
// gatherFull, from a stream whose last batch had events, waits gatherWait
// for more. Under a busy server's flow (10,000 changes a second) that
// triples a batch and adds a few milliseconds to an event's delivery. A
// batch of gatherBytes or more is sent as it is: what the second read
// adds (up to streamBatchBytes) must leave the reply under 16 MiB.
const (
	gatherFrom  = 16
	gatherFull  = 128
	gatherWait  = 8 * time.Millisecond
	gatherBytes = 1 << 20
)

// waitChange waits, as a waiting operation, for the next commit, the
// request's end or the timer; it reports whether the timer fired first.
func (c *streamCursor) waitChange(r *request, changed <-chan struct{}, t clock.Timer) (timedOut bool) {
	defer c.h.waiting(r)()
	select {
	case <-changed:
	case <-r.ctx.Done():
	case <-t.C():
		return true
	}
	return false
}

// awaitWait is how long an empty getMore may wait: its maxTimeMS, or a
// second, and never past the command's deadline.
func awaitWait(r *request) time.Duration {
	wait := awaitDataDefault
	if v, ok := bsonutil.Field(r.body, "maxTimeMS"); ok {
		if ms, err := toInt64(r.name, "maxTimeMS", v); err == nil && ms > 0 {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	if dl, ok := r.ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-tailPoll)
	}
	return wait
}

// resumableCodes are the errors after which a driver may resume a change
// stream: mongod labels them ResumableChangeStreamError.
var resumableCodes = map[mongoerr.Code]bool{
	mongoerr.HostUnreachable: true, mongoerr.HostNotFound: true, mongoerr.NetworkTimeout: true,
	mongoerr.ShutdownInProgress: true, mongoerr.PrimarySteppedDown: true, mongoerr.ExceededTimeLimit: true,
	mongoerr.SocketException: true, mongoerr.NotWritablePrimary: true, mongoerr.InterruptedAtShutdown: true,
	mongoerr.InterruptedDueToReplStateChange: true, mongoerr.NotPrimaryNoSecondaryOk: true,
	mongoerr.NotPrimaryOrSecondary: true, mongoerr.StaleEpoch: true,
	mongoerr.StaleConfig: true, mongoerr.RetryChangeStream: true, mongoerr.FailedToSatisfyReadPreference: true,
}

// resumableStreamError adds the ResumableChangeStreamError label to an
// error a driver may resume after.
func resumableStreamError(err error) error {
	var me *mongoerr.Error
	if !errors.As(err, &me) || !resumableCodes[me.Code] {
		return err
	}
	labeled := *me
	labeled.Extra = append(append([]mongoerr.KV(nil), me.Extra...), mongoerr.KV{Key: "errorLabels", Value: bson.A{"ResumableChangeStreamError"}})
	return &labeled
}
