package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/oplog"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

// A replica set member's local database shows the two collections mongod
// keeps there that tools read: oplog.rs, the member's change log in the
// oplog's format (internal/oplog), and system.replset, the set's
// configuration. They are read-only views: find, aggregate, count,
// collStats and listCollections see them, writes are refused.
const (
	localDB     = "local"
	oplogColl   = "oplog.rs"
	replsetColl = "system.replset"
)

// localView reports whether db.coll is one of those views on this server:
// a member of an initiated set.
func (h *Handler) localView(db, coll string) bool {
	if db != localDB || (coll != oplogColl && coll != replsetColl) {
		return false
	}
	rs := h.deps.Repl
	return rs != nil && rs.Config() != nil && h.deps.Changes != nil
}

// localSource reads a local view for the aggregate r: the oplog newest
// first when r hints {$natural: -1}, else oldest first from where its
// leading $match's ts bound lets it start (the $match still runs).
func (h *Handler) localSource(r *request, coll string) aggregate.Iterator {
	if coll == replsetColl {
		return &sliceSource{docs: []bson.D{h.deps.Repl.Config().Doc()}}
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	if naturalDirection(hint) < 0 {
		return oplog.NewReverseCursor(h.deps.Changes.Reader)
	}
	return oplog.NewCursor(h.deps.Changes.Reader, oplogStart(stagesOf(r)))
}

// oplogStart is the timestamp a leading {$match: {ts: ...}} puts every
// entry after: a tool reading the oplog from a point ($gt, $gte or
// equality with a Timestamp, at the top or inside $and, as mongodump
// asks) reads no more of the log than it needs.
func oplogStart(stages bson.A) changestream.Timestamp {
	var first bson.D
	if len(stages) > 0 {
		first, _ = stages[0].(bson.D)
	}
	if len(first) != 1 || first[0].Key != "$match" {
		return changestream.Timestamp{}
	}
	match, _ := first[0].Value.(bson.D)
	return matchStart(match)
}

// matchStart is the latest lower bound a filter sets on ts.
func matchStart(match bson.D) changestream.Timestamp {
	var from changestream.Timestamp
	for _, e := range match {
		switch e.Key {
		case "ts":
			from = later(from, tsStart(e.Value))
		case "$and":
			all, _ := e.Value.(bson.A)
			for _, v := range all {
				if d, ok := v.(bson.D); ok {
					from = later(from, matchStart(d))
				}
			}
		}
	}
	return from
}

// tsStart is the lower bound one condition on ts sets.
func tsStart(cond any) changestream.Timestamp {
	if ts, ok := cond.(bson.Timestamp); ok {
		return changestream.JustBefore(changestream.Timestamp{T: ts.T, I: ts.I}).TS
	}
	ops, _ := cond.(bson.D)
	var from changestream.Timestamp
	for _, op := range ops {
		ts, ok := op.Value.(bson.Timestamp)
		switch {
		case !ok:
		case op.Key == "$gt":
			from = later(from, changestream.Timestamp{T: ts.T, I: ts.I})
		case op.Key == "$gte":
			from = later(from, changestream.JustBefore(changestream.Timestamp{T: ts.T, I: ts.I}).TS)
		}
	}
	return from
}

func later(a, b changestream.Timestamp) changestream.Timestamp {
	if b.After(a) {
		return b
	}
	return a
}

// refuseLocalWrite refuses a write to a local view.
func (h *Handler) refuseLocalWrite(db, coll string) error {
	if !h.localView(db, coll) {
		return nil
	}
	return mongoerr.Newf(mongoerr.InvalidNamespace, "cannot write to %s.%s: on Mayfly it is a read-only view of the replicated log and configuration", db, coll)
}

// findLocal answers a find on a local view as an aggregate over it. A
// sort or hint of {$natural: -1} reads the oplog newest first, as
// mongod's reverse collection scan does; a tailable find follows it.
func (h *Handler) findLocal(r *request, a *findArgs) (bson.D, error) {
	tailable, await, err := tailOptions(r, a)
	if err != nil {
		return nil, err
	}
	filter, err := optDoc(r, "filter")
	if err != nil {
		return nil, err
	}
	if tailable {
		return h.tailOplog(r, a, filter, await)
	}
	stages := *a
	reverse, err := naturalOrder(&stages)
	if err != nil {
		return nil, err
	}
	out, err := h.runAggregate(localRequest(r, a.coll, findStages(&stages, filter), a.batchSize, reverse), a.coll)
	if err != nil {
		return nil, err
	}
	reply, err := h.requestCursorReply(r, r.db+"."+a.coll, out, a.batchSize, a.singleBatch)
	return reply, causedBy(findExecContext, err)
}

// naturalOrder takes a {$natural: ±1} sort out of a (the view's own
// order) and reports whether it, or the hint, asks for newest first.
func naturalOrder(a *findArgs) (reverse bool, err error) {
	reverse = naturalDirection(a.hint) < 0
	if len(a.sortSpec) == 0 {
		return reverse, nil
	}
	if a.sortSpec[0].Key != "$natural" {
		return reverse, nil
	}
	if len(a.sortSpec) > 1 {
		return false, mongoerr.New(mongoerr.BadValue, "$natural sort cannot be set in combination with other sort keys")
	}
	reverse = naturalDirection(bson.D{a.sortSpec[0]}) < 0
	a.sortSpec, a.sort = nil, nil
	return reverse, nil
}

// naturalDirection is the direction of a {$natural: n} hint or sort, 0
// for anything else.
func naturalDirection(v any) int64 {
	d, ok := v.(bson.D)
	if !ok || len(d) != 1 || d[0].Key != "$natural" {
		return 0
	}
	n, err := toInt64("hint", "$natural", d[0].Value)
	if err != nil {
		return 0
	}
	return n
}

// localRequest is an aggregate of stages over a local view.
func localRequest(r *request, coll string, stages bson.A, batchSize int64, reverse bool) *request {
	inner := *r
	inner.name = "aggregate"
	inner.body = bson.D{
		{Key: "aggregate", Value: coll},
		{Key: "pipeline", Value: stages},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: batchSize}}},
	}
	if reverse {
		inner.body = append(inner.body, bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: int32(-1)}}})
	}
	for _, k := range []string{"collation", "let"} {
		if val, ok := bsonutil.Field(r.body, k); ok {
			inner.body = append(inner.body, bson.E{Key: k, Value: val})
		}
	}
	return &inner
}

// countLocal counts a local view's documents matching q; with no query,
// as mongod's count of a whole collection, from its statistics.
func (h *Handler) countLocal(r *request, name string, q bson.D) (int64, error) {
	if len(q) == 0 {
		return h.docCount(r.db, name)
	}
	stages := bson.A{bson.D{{Key: "$match", Value: q}}}
	out, err := h.runAggregate(localRequest(r, name, stages, 0, false), name)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	n := int64(0)
	return n, eachResult(r, out, func(bson.D) error { n++; return nil })
}

// localInfo is a local view's listCollections entry: the oplog as mongod
// lists it, capped, at the size the log has on disk now (Mayfly keeps
// the log for a time, --change-stream-retention, not to a size), which
// the engine estimates without reading the log.
func (h *Handler) localInfo(coll string) bson.D {
	opts := bson.D{}
	if coll == oplogColl {
		opts = bson.D{{Key: "capped", Value: true}, {Key: "size", Value: max(oplog.DiskSize(h.deps.Changes.Reader), 1)}}
	}
	info := bson.D{
		{Key: "name", Value: coll},
		{Key: "type", Value: "collection"},
		{Key: "options", Value: opts},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}},
	}
	if coll == oplogColl {
		return info // mongod's oplog has no _id index
	}
	return append(info, bson.E{Key: "idIndex", Value: bson.D{{Key: "v", Value: int32(2)},
		{Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}})
}

// localSizes is what collStats reports of a local view. The oplog's
// maxSize is the log's size now: it is kept for a time, not to a size,
// so that is the most it holds; its storageSize is that size too.
func (h *Handler) localSizes(coll string) (collSizes, collShape, error) {
	if coll == oplogColl {
		n, size, err := oplog.Stats(h.deps.Changes.Reader)
		s := collSizes{count: n, size: size, storage: size, indexes: bson.D{}}
		return s, collShape{capped: true, maxSize: max(size, 1)}, err
	}
	b, err := bson.Marshal(h.deps.Repl.Config().Doc())
	s := collSizes{count: 1, size: int64(len(b)), storage: int64(len(b)), indexes: bson.D{{Key: "_id_", Value: int64(0)}}}
	return s, collShape{nindexes: 1}, err
}

// listLocalViews adds the local views to a listCollections of local.
func (h *Handler) listLocalViews(r *request, f *query.Filter, nameOnly bool, docs []bson.D) []bson.D {
	for _, coll := range []string{oplogColl, replsetColl} {
		if !h.localView(r.db, coll) || !h.collectionListable(r, coll) {
			continue
		}
		entry := h.localInfo(coll)
		if !f.Match(entry) {
			continue
		}
		if nameOnly {
			entry = entry[:2]
		}
		docs = append(docs, entry)
	}
	return docs
}

// tailOplog answers a tailable find on the oplog, as oplog tailers
// (change data capture tools, Meteor) send it: a cursor that stays open
// at the log's end, each getMore reading on from the last entry it
// returned and, with awaitData, waiting for new ones. The filter's ts
// bound, if any, says where it starts.
func (h *Handler) tailOplog(r *request, a *findArgs, filter bson.D, await bool) (bson.D, error) {
	if a.coll != oplogColl {
		return nil, mongoerr.Newf(mongoerr.BadValue, "error processing query: ns=%s.%s tailable cursor requested on non capped collection", r.db, a.coll)
	}
	var src cursor.Source = &oplogTail{log: h.deps.Changes.Reader, filter: a.filter, after: matchStart(filter), await: await}
	if a.projection != nil {
		src = &projectSource{src: src, f: projector(a.projection, a.filter, false)}
	}
	return h.requestCursorReply(r, r.db+"."+a.coll, src, a.batchSize, false)
}

// oplogTail is a tailable cursor's source on the oplog: at the log's end
// it answers "nothing for now" and reads on from there the next time.
type oplogTail struct {
	log    storage.Reader
	filter *query.Filter
	after  changestream.Timestamp // the last entry read
	cur    *oplog.Cursor
	await  bool
}

func (s *oplogTail) awaits() bool { return s.await }

func (s *oplogTail) Next() (bson.D, bool, error) {
	for {
		if s.cur == nil {
			s.cur = oplog.NewCursor(s.log, s.after)
		}
		d, ok, err := s.cur.Next()
		if err != nil || !ok {
			s.cur = nil
			return nil, false, err
		}
		if ts, isTS := lookupTS(d); isTS {
			s.after = ts
		}
		if match, err := s.filter.MatchErr(d); err != nil || match {
			return d, err == nil, err
		}
	}
}

func (s *oplogTail) Close() error { return nil }

func lookupTS(entry bson.D) (changestream.Timestamp, bool) {
	v, _ := bsonutil.Field(entry, "ts")
	ts, ok := v.(bson.Timestamp)
	return changestream.Timestamp{T: ts.T, I: ts.I}, ok
}
