package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/update"
)

// modifier is an update in any of its three forms: operators, a
// replacement document, or an aggregation pipeline.
type modifier interface {
	apply(doc bson.D, positional int, isInsert bool, now time.Time) (bson.D, bool, error)
	replacement() bool
}

type opModifier struct {
	u           *update.Update
	keepEmptyTs bool // bypassEmptyTsReplacement
}

func (m opModifier) apply(doc bson.D, pos int, isInsert bool, now time.Time) (bson.D, bool, error) {
	return m.u.Apply(doc, update.Context{Now: now, IsInsert: isInsert, Positional: pos, KeepEmptyTimestamps: m.keepEmptyTs})
}

func (m opModifier) replacement() bool { return m.u.IsReplacement() }

type pipelineModifier struct {
	p     *aggregate.Pipeline
	guard *expr.Guard // nil: the pipeline runs to its end
}

// guardModifier makes a pipeline-style m stop when g's operation ends;
// an operator update's work is bounded by its document.
func guardModifier(m modifier, g *expr.Guard) modifier {
	if pm, ok := m.(pipelineModifier); ok {
		pm.guard = g
		return pm
	}
	return m
}

func (m pipelineModifier) replacement() bool { return false }

func (m pipelineModifier) apply(doc bson.D, _ int, _ bool, now time.Time) (bson.D, bool, error) {
	out, err := m.p.Run(paging.Slice(doc), nilEnv{now: now, guard: m.guard})
	if err != nil {
		return nil, false, err
	}
	defer out.Close()
	next, ok, err := out.Next()
	if err != nil || !ok {
		return nil, false, err
	}
	oldID, _ := bsonutil.Field(doc, "_id")
	newID, hasID := bsonutil.Field(next, "_id")
	if !hasID {
		next = append(bson.D{{Key: "_id", Value: oldID}}, next...)
	} else if !bsonutil.Equal(oldID, newID) {
		return nil, false, mongoerr.Newf(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s", bsonutil.Format(newID))
	}
	return next, bsonutil.Compare(doc, next) != 0, nil
}

// nilEnv serves pipelines that read no other collection.
type nilEnv struct {
	now   time.Time
	guard *expr.Guard // nil: the pipeline runs to its end
}

// Guard is the operation's, when the pipeline runs for one.
func (e nilEnv) Guard() *expr.Guard { return e.guard }

func (e nilEnv) Collection(name string) (aggregate.Iterator, error) {
	return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "this pipeline cannot read other collections")
}

func (e nilEnv) CollStats(bson.D) (bson.D, error) {
	return nil, mongoerr.New(mongoerr.Location40415, "$collStats is not allowed here")
}

func (e nilEnv) Now() time.Time { return e.now }

// parseModifier reads u: an operator document, a replacement, or a
// pipeline (array of stages).
func parseModifier(u any, arrayFilters []bson.D, lv *letScope, coll *collation.Collation) (modifier, error) {
	switch x := u.(type) {
	case bson.D:
		parsed, err := update.ParseCollated(x, arrayFilters, collator(coll))
		if err != nil {
			return nil, err
		}
		return opModifier{u: parsed}, nil
	case bson.A:
		if len(arrayFilters) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may not be specified for pipeline-style updates")
		}
		p, err := aggregate.Parse(x, aggregate.Options{Let: lv.doc, Collation: collator(coll)})
		if err != nil {
			return nil, err
		}
		return pipelineModifier{p: p}, nil
	}
	return nil, mongoerr.Newf(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}

// updateStmt is one parsed statement of an update command.
type updateStmt struct {
	filter *query.Filter
	mod    modifier
	upsert bool
	multi  bool
	hint   any
	// sort picks the document a single-document update changes (8.0).
	sort     *query.Sort
	sortSpec bson.D
}

var updateStmtFields = []string{"q", "u", "upsert", "multi", "arrayFilters", "hint", "collation", "c", "sort", "upsertSupplied"}

func parseUpdateStmt(s bson.D, lv *letScope, dflt *collation.Collation) (*updateStmt, error) {
	for _, e := range s {
		if !contains(updateStmtFields, e.Key) {
			return nil, mongoerr.Newf(mongoerr.Location40415, "BSON field 'update.updates.%s' is an unknown field.", e.Key)
		}
	}
	coll, err := statementCollation(s, dflt)
	if err != nil {
		return nil, err
	}
	st := &updateStmt{}
	q, _ := bsonutil.Field(s, "q")
	qd, ok := q.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'update.updates.q' is missing but a required field")
	}
	if st.filter, err = lv.filter(qd, coll); err != nil {
		return nil, err
	}
	if err := st.parseFlags(s); err != nil {
		return nil, err
	}
	if err := st.parseSort(s); err != nil {
		return nil, err
	}
	st.sort = collatedSort(st.sort, coll)
	return st, st.parseMod(s, lv, coll)
}

// parseSort reads the statement's sort, which only a single-document
// update may have.
func (st *updateStmt) parseSort(s bson.D) error {
	v, ok := bsonutil.Field(s, "sort")
	if !ok || v == nil {
		return nil
	}
	d, isDoc := v.(bson.D)
	if !isDoc {
		return wrongType("update.updates", "sort", v, "object")
	}
	if len(d) == 0 {
		return nil
	}
	var err error
	st.sort, err = query.NewSort(d)
	st.sortSpec = d
	return err
}

func (st *updateStmt) parseFlags(s bson.D) error {
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"upsert", &st.upsert}, {"multi", &st.multi}} {
		v, ok := bsonutil.Field(s, f.name)
		if !ok {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return wrongType("update.updates", f.name, v, "bool")
		}
		*f.dst = b
	}
	st.hint, _ = bsonutil.Field(s, "hint")
	return nil
}

func (st *updateStmt) parseMod(s bson.D, lv *letScope, coll *collation.Collation) error {
	u, ok := bsonutil.Field(s, "u")
	if !ok {
		return mongoerr.New(mongoerr.Location40414, "BSON field 'update.updates.u' is missing but a required field")
	}
	var filters []bson.D
	if v, ok := bsonutil.Field(s, "arrayFilters"); ok {
		var err error
		if filters, err = docArray("update.updates", "arrayFilters", v); err != nil {
			return err
		}
	}
	var err error
	if st.mod, err = parseModifier(u, filters, lv, coll); err != nil {
		return err
	}
	if st.multi && st.mod.replacement() {
		return mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	return nil
}

func cmdUpdate(h *Handler, r *request) (bson.D, error) {
	a, stmts, err := parseWriteArgs(r, "updates")
	if err != nil {
		return nil, err
	}
	if err := updateShape.check(stmts); err != nil {
		return nil, err
	}
	if err := docstore.ValidateUserWrite(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, a.coll); err != nil {
		return nil, err
	}
	bypass, err := bypassArg(r)
	if err != nil {
		return nil, err
	}
	lv, err := h.parseLet(r)
	if err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	res := writeResult{withModified: true}
	run := h.commandRunner(r, &a, rt, bypass, &res)
	run.prior = res.addPrior
	run.gather = func(i int) (*stmtGroup, error) {
		if sortWithMulti(stmts[i]) {
			// mongod checks this outside the statement's error
			// handling: the whole command fails.
			return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify sort with multi=true")
		}
		return h.updateGroup(r, a, lv, stmts[i:], i, rt, func(k int, e *updateEffect) { e.count(i+k, &res) }), nil
	}
	run.alone = func(i int) (bool, error) {
		return run.failed(i, h.updateStatement(r, a, lv, i, stmts[i], &res, rt))
	}
	if err := run.run(len(stmts)); err != nil {
		return nil, err
	}
	reply, err := h.finishWrite(a, &res)
	return withRetried(rt, reply), err
}

func (h *Handler) updateStatement(r *request, a writeArgs, lv *letScope, i int, s bson.D, res *writeResult, rt *session.Txn) error {
	if err := checkInterrupt(r.ctx); err != nil {
		return err
	}
	st, err := h.parsedUpdate(r, a, lv, s)
	if err != nil {
		return err
	}
	if st.multi && rt != nil {
		return refuseMulti(rt)
	}
	opt := recorded(rt, a.opt, i, func() bson.D { return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}} })
	if c := h.deps.Store.Collection(r.db, a.coll); c != nil {
		n, modified, err := h.applyUpdates(r, c, st, opt)
		if err != nil {
			return err // a statement that fails counts nothing, as on mongod
		}
		res.n += n
		res.nModified += modified
		if n > 0 || !st.upsert {
			return nil
		}
	}
	if !st.upsert {
		return nil
	}
	id, err := h.upsert(r.db, a.coll, st.filter, st.mod, func(id any) docstore.WriteOptions {
		return recorded(rt, a.opt, i, func() bson.D { return bson.D{{Key: "n", Value: int32(1)}, {Key: "upserted", Value: id}} })
	})
	if err != nil {
		return err
	}
	res.n++
	res.upserted = append(res.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: id}})
	return nil
}

// parsedUpdate is statement s, ready to run in r.
func (h *Handler) parsedUpdate(r *request, a writeArgs, lv *letScope, s bson.D) (*updateStmt, error) {
	st, err := parseUpdateStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return nil, err
	}
	if m, ok := st.mod.(opModifier); ok && a.keepEmptyTs {
		m.keepEmptyTs = true
		st.mod = m
	}
	g := newGuard(r.ctx)
	st.filter, st.mod = st.filter.Guarded(g), guardModifier(st.mod, g)
	return st, nil
}

// firstMatching runs write on the first document matching f and returns
// 1 when write reported it matched. write re-checks the filter under the
// document's lock and reports whether the document still matched.
//
// When the plan's index bounds express f exactly, the _ids come from the
// index entries alone (docstore.CandidateIDs) and write's own read is the
// only one of each document: candidates are tried until one matches.
// Otherwise the first matching document is found by a scan.
func firstMatching(r *request, c *docstore.Collection, f *query.Filter, hint any, write func(id any) (bool, error)) (int64, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return 0, err
	}
	if cands, ok := c.CandidateIDs(plan, f); ok {
		defer cands.Close()
		return writeCandidates(r, cands.WithContext(r.ctx), write)
	}
	ids, err := matchingIDs(r, c.Scan(plan, f).WithContext(r.ctx), 1)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	matched, err := write(ids[0])
	return b2i(matched), err
}

// allMatching collects the _id of every document f matches, for a
// multi-document write: every _id is collected before the write changes
// anything, so it never meets its own writes.
func allMatching(r *request, c *docstore.Collection, f *query.Filter, hint any) ([]any, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	if cands, ok := c.CandidateIDs(plan, f); ok {
		defer cands.Close()
		return collectIDs(r, cands.WithContext(r.ctx).Next, 0)
	}
	return matchingIDs(r, c.Scan(plan, f).WithContext(r.ctx), 0)
}

// writeCandidates writes the first candidate that write finds matching.
func writeCandidates(r *request, cands *docstore.IDIter, write func(id any) (bool, error)) (int64, error) {
	for {
		if err := checkInterrupt(r.ctx); err != nil {
			return 0, err
		}
		id, ok, err := cands.Next()
		if err != nil || !ok {
			return 0, err
		}
		if matched, err := write(id); matched || err != nil {
			return b2i(matched), err
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// collectIDs gathers the _ids next yields, at most limit (0 for all).
func collectIDs(r *request, next func() (any, bool, error), limit int) ([]any, error) {
	var ids []any
	for limit == 0 || len(ids) < limit {
		if err := checkInterrupt(r.ctx); err != nil {
			return nil, err
		}
		id, ok, err := next()
		if err != nil || !ok {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// matchingIDs collects the _ids of the documents a scan yields, at most
// limit (0 for all).
func matchingIDs(r *request, it *docstore.DocIter, limit int) ([]any, error) {
	defer it.Close()
	return collectIDs(r, func() (any, bool, error) {
		d, ok, err := it.Next()
		if !ok || err != nil {
			return nil, ok, err
		}
		id, _ := bsonutil.Field(d, "_id")
		return id, true, nil
	}, limit)
}

func (h *Handler) applyUpdates(r *request, c *docstore.Collection, st *updateStmt, opt docstore.WriteOptions) (n, modified int64, err error) {
	switch {
	case st.sort != nil:
		return h.updateFirstSorted(r, c, st, opt)
	case st.multi:
		ids, err := allMatching(r, c, st.filter, st.hint)
		if err != nil {
			return 0, 0, err
		}
		return h.updateAll(c, ids, st.filter, st.mod, opt)
	}
	n, err = firstMatching(r, c, st.filter, st.hint, func(id any) (bool, error) {
		matched, changed, err := h.updateOne(c, id, st.filter, st.mod, opt)
		modified += b2i(changed)
		return matched, err
	})
	return n, modified, err
}

// updateOne re-checks the filter under the write lock and applies mod.
func (h *Handler) updateOne(c *docstore.Collection, id any, f *query.Filter, mod modifier, opt docstore.WriteOptions) (matched, changed bool, err error) {
	now := h.deps.Clock.Now()
	_, err = c.Modify(id, opt, func(doc bson.D) (docstore.Change, error) {
		var ch docstore.Change
		ch, matched, changed, err = updateDoc(doc, f, mod, now)
		return ch, err
	})
	return matched, changed, err
}

// updateAll updates the documents of ids that still match f, committing
// them in groups (docstore.ModifyGroup).
func (h *Handler) updateAll(c *docstore.Collection, ids []any, f *query.Filter, mod modifier, opt docstore.WriteOptions) (n, modified int64, err error) {
	now := h.deps.Clock.Now()
	matched, changed := make([]bool, len(ids)), make([]bool, len(ids))
	done, err := c.ModifyGroup(ids, opt, func(i int, doc bson.D) (docstore.Change, error) {
		var ch docstore.Change
		var err error
		ch, matched[i], changed[i], err = updateDoc(doc, f, mod, now)
		return ch, err
	})
	for i := range done {
		n += b2i(matched[i])
		modified += b2i(changed[i])
	}
	return n, modified, err
}

// updateDoc applies mod to doc, the live document (nil when gone), when
// it still matches f.
func updateDoc(doc bson.D, f *query.Filter, mod modifier, now time.Time) (ch docstore.Change, matched, changed bool, err error) {
	if doc == nil {
		return ch, false, false, nil
	}
	ok, pos := f.MatchPositional(doc)
	if !ok {
		return ch, false, false, nil
	}
	next, changed, err := mod.apply(doc, pos, false, now)
	if err != nil || !changed {
		return ch, true, false, err
	}
	return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: mod.replacement()}, true, true, nil
}

// upsert inserts the document an update builds when nothing matched.
// optFor gives the write options for the document's _id.
func (h *Handler) upsert(db, coll string, f *query.Filter, mod modifier, optFor func(id any) docstore.WriteOptions) (any, error) {
	doc, err := upsertDoc(f, mod, h.deps.Clock.Now())
	if err != nil {
		return nil, err
	}
	c, _, err := h.deps.Store.GetOrCreate(db, coll)
	if err != nil {
		return nil, err
	}
	id, _ := bsonutil.Field(doc, "_id")
	if err := insertOne(c, doc, optFor(id)); err != nil {
		return nil, err
	}
	return id, nil
}

func upsertDoc(f *query.Filter, mod modifier, now time.Time) (bson.D, error) {
	seed, err := update.UpsertSeed(f.Equalities())
	if err != nil {
		return nil, err
	}
	if mod.replacement() {
		seedID, hasSeedID := bsonutil.Field(seed, "_id")
		doc, _, err := mod.apply(bson.D{}, -1, true, now)
		if err != nil {
			return nil, err
		}
		if _, has := bsonutil.Field(doc, "_id"); !has && hasSeedID {
			doc = append(bson.D{{Key: "_id", Value: seedID}}, doc...)
		}
		return docstore.PrepareInsert(doc)
	}
	doc, _, err := mod.apply(seed, -1, true, now)
	if err != nil {
		return nil, err
	}
	return docstore.PrepareInsert(doc)
}

// updateFirstSorted updates the first matching document in the
// statement's sort order. When that document changes before the write
// lock is taken and no longer matches, the search starts over.
func (h *Handler) updateFirstSorted(r *request, c *docstore.Collection, st *updateStmt, opt docstore.WriteOptions) (n, modified int64, err error) {
	for try := 0; try < famRetries; try++ {
		target, err := firstInOrder(r, c, st.filter, st.sort, st.hint)
		if err != nil || target == nil {
			return 0, 0, err
		}
		id, _ := bsonutil.Field(target, "_id")
		matched, changed, err := h.updateOne(c, id, st.filter, st.mod, opt)
		if matched || err != nil {
			return b2i(matched), b2i(changed), err
		}
	}
	return 0, 0, nil
}

func sortWithMulti(s bson.D) bool {
	multi, _ := bsonutil.Field(s, "multi")
	sort, hasSort := bsonutil.Field(s, "sort")
	return multi == true && hasSort && sort != nil
}
