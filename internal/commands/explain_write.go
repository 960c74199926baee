package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// The explains of update, delete and findAndModify: the executor plans
// the scan, nothing is written, and the counters say what would be.

// parseExplainedWrite reads an explained update or delete: its one
// statement (in field) and its let.
func (h *Handler) parseExplainedWrite(r *request, field string) (writeArgs, bson.D, *letScope, error) {
	a, stmts, err := parseWriteArgs(r, field)
	if err != nil {
		return a, nil, nil, err
	}
	if len(stmts) != 1 {
		return a, nil, nil, mongoerr.New(mongoerr.InvalidLength, "explained write batches must be of size 1")
	}
	lv, err := h.parseLet(r)
	return a, stmts[0], lv, err
}

func (h *Handler) explainUpdate(r *request, v executor.Verbosity) (*executor.Explained, error) {
	a, stmt, lv, err := h.parseExplainedWrite(r, "updates")
	if err != nil {
		return nil, err
	}
	st, err := parseUpdateStmt(stmt, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return nil, err
	}
	ex, err := h.executor().PlanScan(h.readOp(r, a.coll), h.deps.Store.Collection(r.db, a.coll), st.filter, docstore.Query{Filter: st.filter, Hint: st.hint})
	if err != nil {
		return nil, err
	}
	sortSt := pushSortOne(ex, st.sort, st.sortSpec)
	up := ex.Push("UPDATE", nil)
	ns := r.db + "." + a.coll
	if v == executor.QueryPlannerOnly {
		return ex.Explained(ns, false), nil
	}
	matched, modified, err := h.dryRunUpdate(r, ex, st, sortSt)
	if err != nil {
		return nil, err
	}
	up.Exec = bson.D{
		{Key: "nMatched", Value: docstore.Num(matched)},
		{Key: "nWouldModify", Value: docstore.Num(modified)},
		{Key: "nWouldUpsert", Value: matched == 0 && st.upsert},
	}
	return ex.Explained(ns, true), nil
}

// dryRunUpdate applies the update to the matching documents without
// storing anything.
func (h *Handler) dryRunUpdate(r *request, ex *executor.Plan, st *updateStmt, sortSt *aggregate.StageRun) (matched, modified int64, err error) {
	if sortSt != nil {
		return h.dryRunSortedUpdate(r, ex, st, sortSt)
	}
	src := ex.Start()
	defer src.Close()
	now := h.deps.Clock.Now()
	for st.multi || matched == 0 {
		doc, ok, err := src.Next()
		if err != nil || !ok {
			return matched, modified, err
		}
		matched++
		_, pos := st.filter.MatchPositional(doc)
		_, changed, err := st.mod.Apply(doc, pos, false, now)
		if err != nil {
			return matched, modified, err
		}
		if changed {
			modified++
		}
	}
	return matched, modified, checkInterrupt(r.ctx)
}

func (h *Handler) explainDelete(r *request, v executor.Verbosity) (*executor.Explained, error) {
	a, stmt, lv, err := h.parseExplainedWrite(r, "deletes")
	if err != nil {
		return nil, err
	}
	f, limit, hint, err := parseDeleteStmt(stmt, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return nil, err
	}
	ex, err := h.executor().PlanScan(h.readOp(r, a.coll), h.deps.Store.Collection(r.db, a.coll), f, docstore.Query{Filter: f, Hint: hint})
	if err != nil {
		return nil, err
	}
	del := ex.Push("DELETE", nil)
	ns := r.db + "." + a.coll
	if v == executor.QueryPlannerOnly {
		return ex.Explained(ns, false), nil
	}
	var src cursor.Source = ex.Start()
	if limit == 1 {
		src = aggregate.Limit(src, 1)
	}
	defer src.Close()
	n, err := h.readOp(r, a.coll).CountAll(src)
	if err != nil {
		return nil, err
	}
	del.Exec = bson.D{{Key: "nWouldDelete", Value: docstore.Num(n)}}
	return ex.Explained(ns, true), nil
}

// explainFAM explains findAndModify as it runs: the scan, an in-memory
// SORT keeping the first document when a sort is given, then the UPDATE
// or DELETE of that document.
func (h *Handler) explainFAM(r *request, v executor.Verbosity) (*executor.Explained, error) {
	a, err := parseFAM(h, r)
	if err != nil {
		return nil, err
	}
	ex, err := h.executor().PlanScan(h.readOp(r, a.coll), h.deps.Store.Collection(r.db, a.coll), a.filter, docstore.Query{Filter: a.filter, Hint: a.hint})
	if err != nil {
		return nil, err
	}
	spec, _ := optDoc(r, "sort")
	sortSt := pushSortOne(ex, a.sort, spec)
	write := ex.Push(famStageName(a), nil)
	ns := r.db + "." + a.coll
	if v == executor.QueryPlannerOnly {
		return ex.Explained(ns, false), nil
	}
	target, err := famDryTarget(r, ex, a, sortSt)
	if err != nil {
		return nil, err
	}
	write.Exec, err = h.famCounters(a, target)
	if err != nil {
		return nil, err
	}
	return ex.Explained(ns, true), nil
}

func famStageName(a *famArgs) string {
	if a.remove {
		return "DELETE"
	}
	return "UPDATE"
}

// famDryTarget finds the document findAndModify would change.
func famDryTarget(r *request, ex *executor.Plan, a *famArgs, sortSt *aggregate.StageRun) (bson.D, error) {
	return dryTarget(r, ex, a.sort, sortSt)
}

// dryTarget is the document a single-document write would change: the
// first in the sort's order when there is a SORT stage.
func dryTarget(r *request, ex *executor.Plan, s *query.Sort, sortSt *aggregate.StageRun) (bson.D, error) {
	src := ex.Start()
	defer src.Close()
	if sortSt == nil {
		d, _, err := src.Next()
		return d, err
	}
	docs, _, err := sortWithin(r, src, s, 1, false)
	sortSt.Out = int64(len(docs))
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

func (h *Handler) famCounters(a *famArgs, target bson.D) (bson.D, error) {
	matched := int64(0)
	if target != nil {
		matched = 1
	}
	if a.remove {
		return bson.D{{Key: "nWouldDelete", Value: docstore.Num(matched)}}, nil
	}
	modified := int64(0)
	if target != nil {
		_, pos := a.filter.MatchPositional(target)
		_, changed, err := a.mod.Apply(target, pos, false, h.deps.Clock.Now())
		if err != nil {
			return nil, err
		}
		if changed {
			modified = 1
		}
	}
	return bson.D{
		{Key: "nMatched", Value: docstore.Num(matched)},
		{Key: "nWouldModify", Value: docstore.Num(modified)},
		{Key: "nWouldUpsert", Value: matched == 0 && a.upsert},
	}, nil
}

// pushSortOne adds the SORT stage of a single-document write with a sort
// (nil when there is none): the first document in order is the one.
func pushSortOne(ex *executor.Plan, s *query.Sort, spec bson.D) *aggregate.StageRun {
	if s == nil || s.IsEmpty() {
		return nil
	}
	return ex.Push("SORT", bson.D{{Key: "sortPattern", Value: spec}, {Key: "memLimit", Value: int32(executor.SortMemoryLimit)}, {Key: "limitAmount", Value: int32(1)}, {Key: "type", Value: "simple"}})
}

// dryRunSortedUpdate is dryRunUpdate for an update with a sort: only the
// first matching document in order would change.
func (h *Handler) dryRunSortedUpdate(r *request, ex *executor.Plan, st *updateStmt, sortSt *aggregate.StageRun) (matched, modified int64, err error) {
	target, err := dryTarget(r, ex, st.sort, sortSt)
	if err != nil || target == nil {
		return 0, 0, err
	}
	_, pos := st.filter.MatchPositional(target)
	_, changed, err := st.mod.Apply(target, pos, false, h.deps.Clock.Now())
	return 1, b2i(changed), err
}

// sortWithin sorts src in memory under find's memory limit
// (executor.SortWithin), stopping once r is interrupted.
func sortWithin(r *request, src cursor.Source, s *query.Sort, keep int64, allowDisk bool) ([]bson.D, int64, error) {
	return executor.SortWithin(func() error { return checkInterrupt(r.ctx) }, src, s, keep, allowDisk)
}
