package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/oplog"
	"github.com/mayflydb/mayfly/internal/query"
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
		return paging.Slice(h.deps.Repl.Config().Doc())
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	if naturalDirection(hint) < 0 {
		return oplog.NewReverseCursor(h.deps.Changes.Reader)
	}
	return oplog.NewCursor(h.deps.Changes.Reader, oplog.StartOf(stagesOf(r)))
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
	spec := stages.spec(nil)
	out, err := h.runAggregate(localRequest(r, a.coll, executor.FindStages(filter, &spec), a.batchSize, reverse), a.coll)
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
	n, err := cmdargs.Int64("hint", "$natural", d[0].Value)
	if err != nil {
		return 0
	}
	return n
}

// localRequest is an aggregate of stages over a local view.
func localRequest(r *request, coll string, stages bson.A, batchSize int64, reverse bool) *request {
	var options bson.D
	if reverse {
		options = bson.D{{Key: "hint", Value: bson.D{{Key: "$natural", Value: int32(-1)}}}}
	}
	return innerAggregate(r, coll, stages, batchSize, options, "collation", "let")
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
	return countResults(r, out)
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
func (h *Handler) localSizes(coll string) (diag.Sizes, diag.Shape, error) {
	if coll == oplogColl {
		n, size, err := oplog.Stats(h.deps.Changes.Reader)
		s := diag.Sizes{Count: n, Size: size, Storage: size, Indexes: bson.D{}}
		return s, diag.Shape{Capped: true, MaxSize: max(size, 1)}, err
	}
	b, err := bson.Marshal(h.deps.Repl.Config().Doc())
	s := diag.Sizes{Count: 1, Size: int64(len(b)), Storage: int64(len(b)), Indexes: bson.D{{Key: "_id_", Value: int64(0)}}}
	return s, diag.Shape{NIndexes: 1}, err
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
	var src cursor.Source = &oplogTail{Tail: oplog.NewTail(h.deps.Changes.Reader, a.filter, oplog.MatchStart(filter)), await: await}
	if a.projection != nil {
		src = paging.Project(src, projector(a.projection, a.filter, false))
	}
	return h.requestCursorReply(r, r.db+"."+a.coll, src, a.batchSize, false)
}

// oplogTail is a tailable cursor's source on the oplog (oplog.Tail),
// waiting at the log's end with awaitData.
type oplogTail struct {
	*oplog.Tail
	await bool
}

func (s *oplogTail) Awaits() bool { return s.await }
