package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

type findArgs struct {
	coll        string
	filter      *query.Filter
	sort        *query.Sort
	sortSpec    bson.D
	projection  *query.Projection
	projSpec    bson.D
	skip, limit int64
	batchSize   int64
	singleBatch bool
	hint        any
	allowDisk   bool
	collation   *collation.Collation
	showRecord  bool
	returnKey   bool
	// refresh: the documents returned refresh their refreshOnRead dates
	// (a find, not its explain).
	refresh bool
}

var findFields = []string{
	"filter", "sort", "projection", "skip", "limit", "batchSize", "singleBatch", "hint",
	"allowDiskUse", "collation", "let", "noCursorTimeout", "allowPartialResults", "readOnce",
	"tailable", "awaitData", "oplogReplay", "min", "max", "returnKey", "showRecordId", "explain",
	"isCountCommand"}

// findUnsupported are find options for features Mayfly lacks. oplogReplay
// is not among them: mongod has ignored it since 4.4 (it finds the start
// of a ts range by itself), and mongodump still sends it.
var findUnsupported = []string{"min", "max"}

// parseFind reads r's find into a, which its callers keep on their
// stacks: what outlives the command (a cursor) keeps a's parts.
func parseFind(h *Handler, r *request, a *findArgs) error {
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return err
	}
	if err = checkFields(r, findFields...); err != nil {
		return err
	}
	for _, name := range findUnsupported {
		if v, ok := bsonutil.Field(r.body, name); ok && v != false {
			return mongoerr.Newf(mongoerr.BadValue, "the find option '%s' is not supported by Mayfly", name)
		}
	}
	if a.collation, err = h.requestCollation(r); err != nil {
		return err
	}
	var lv letScope // parseShape keeps none of it
	if err = h.readLet(r, &lv); err != nil {
		return err
	}
	if err = a.parseShape(r, &lv); err != nil {
		return err
	}
	return a.parseCounts(r)
}

func (a *findArgs) parseShape(r *request, lv *letScope) error {
	f, err := optDoc(r, "filter")
	if err != nil {
		return err
	}
	if a.filter, err = lv.filter(f, a.collation); err != nil {
		return err
	}
	a.filter = guardFilter(r.ctx, a.filter)
	s, err := optDoc(r, "sort")
	if err != nil {
		return err
	}
	if len(s) > 0 {
		if a.sort, err = query.NewSort(s); err != nil {
			return err
		}
		a.sort = collatedSort(a.sort, a.collation)
		a.sortSpec = s
	}
	p, err := optDoc(r, "projection")
	if err != nil {
		return err
	}
	if len(p) > 0 {
		if a.projection, err = query.NewProjection(p); err != nil {
			return err
		}
		a.projSpec = p
	}
	a.hint, _ = bsonutil.Field(r.body, "hint")
	return nil
}

func (a *findArgs) parseCounts(r *request) error {
	var err error
	if a.skip, err = optInt(r, "skip", 0); err != nil {
		return err
	}
	if a.limit, err = optInt(r, "limit", 0); err != nil {
		return err
	}
	bs, _ := bsonutil.Field(r.body, "batchSize")
	if a.batchSize, err = batchSizeArg(r, bs, "batchSize"); err != nil {
		return err
	}
	if a.singleBatch, err = optBool(r, "singleBatch"); err != nil {
		return err
	}
	if a.showRecord, err = optBool(r, "showRecordId"); err != nil {
		return err
	}
	if a.returnKey, err = optBool(r, "returnKey"); err != nil {
		return err
	}
	a.allowDisk, err = optBool(r, "allowDiskUse")
	return err
}

// findNamespace is "db.coll": the request's own namespace, made already
// for currentOp, when its first field names coll (it always does, but
// the check keeps this independent of collectionArg).
func findNamespace(r *request, coll string) string {
	if s, ok := r.body[0].Value.(string); ok && s == coll && coll != "" {
		return r.namespace()
	}
	return r.joinNamespace(coll)
}

func cmdFind(h *Handler, r *request) (bson.D, error) {
	cursorContext(r)
	var args findArgs
	if err := parseFind(h, r, &args); err != nil {
		return nil, err
	}
	a := &args
	ns := findNamespace(r, a.coll)
	if h.localView(r.db, a.coll) {
		return h.findLocal(r, a)
	}
	if v, err := h.resolveView(r.db, a.coll); err != nil || v != nil {
		if err != nil {
			return nil, err
		}
		return h.findOnView(r, a, v)
	}
	c := h.collection(r, r.db, a.coll)
	if c == nil {
		return cursorDoc(0, ns, "firstBatch", bson.A{}), nil
	}
	if tailable, await, err := tailOptions(r, a); err != nil || tailable {
		if err != nil {
			return nil, err
		}
		return h.findTailable(r, a, c, await)
	}
	a.refresh = h.refreshesOnRead(c)
	src, err := h.findSource(r, c, a)
	if err != nil {
		return nil, causedBy(findExecContext, err)
	}
	if a.limit > 0 {
		src = paging.Limit(src, a.limit)
	}
	reply, err := h.requestCursorReply(r, ns, src, a.batchSize, a.singleBatch)
	return reply, causedBy(findExecContext, err)
}

// findSource chains scan → sort (unless the index provides the order) →
// skip → limit → projection, as executor.PlanFind lays the stages out.
func (h *Handler) findSource(r *request, c *docstore.Collection, a *findArgs) (cursor.Source, error) {
	spec := a.spec(c)
	ex, err := h.executor().PlanFind(h.readOp(r, a.coll), c, &spec)
	if err != nil {
		return nil, err
	}
	run, err := ex.RunFind()
	if err != nil {
		return nil, err
	}
	var src cursor.Source = run
	if a.returnKey {
		// The keys replace the documents: no projection, no record id.
		return executor.WithIndexKeys(src, ex.KeyIndex()), nil
	}
	if a.refresh && a.projection == nil {
		// With a projection, the projection refreshes (spec).
		src = paging.Refreshing(c, run)
	}
	if !a.showRecord || a.projection != nil {
		return src, nil // a projection appends $recordId itself
	}
	return executor.WithRecordIDs(src), nil
}

// spec is what the executor reads for the find a, over c. The projection
// step refreshes each document whole before reshaping it when the
// documents returned refresh their refreshOnRead dates. It is a value:
// the executor keeps none of it but its parts, so it can stay on the
// caller's stack.
func (a *findArgs) spec(c *docstore.Collection) executor.FindSpec {
	s := executor.FindSpec{
		Filter: a.filter, Sort: a.sort, SortSpec: a.sortSpec, ProjSpec: a.projSpec,
		Skip: a.skip, Limit: a.limit, Hint: a.hint, AllowDisk: a.allowDisk, Collation: a.collation,
	}
	if a.projection != nil && !a.returnKey {
		s.Project = projector(a.projection, a.filter, a.showRecord)
		if a.refresh {
			s.Project = paging.RefreshThen(c, s.Project)
		}
	}
	return s
}

// projector applies a find projection: positional operators read the
// array position the filter matched; recordID appends $recordId, from the
// document before projection.
func projector(p *query.Projection, f *query.Filter, withRecordID bool) func(bson.D) (bson.D, error) {
	return func(d bson.D) (bson.D, error) {
		_, pos := f.MatchPositional(d)
		out, err := p.Apply(d, pos)
		if err == nil && withRecordID {
			id, _ := bsonutil.Field(d, "_id")
			out = append(out, bson.E{Key: "$recordId", Value: executor.RecordID(id)})
		}
		return out, err
	}
}
