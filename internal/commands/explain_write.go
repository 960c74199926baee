package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// The explains of update, delete and findAndModify: the command is
// parsed as it runs, and the executor plans the scan and counts what the
// write would change (executor.DryWrite) without writing anything.

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
	w := executor.DryWrite{Stage: "UPDATE", Sort: st.sort, SortSpec: st.sortSpec, One: !st.multi,
		Update: h.dryUpdate(st.filter, st.mod), Upsert: st.upsert}
	return ex.ExplainWrite(w, r.db+"."+a.coll, v)
}

// dryUpdate reports whether mod would change a document filter matched,
// storing nothing.
func (h *Handler) dryUpdate(filter *query.Filter, mod writeops.Modifier) func(bson.D) (bool, error) {
	return func(doc bson.D) (bool, error) {
		_, pos := filter.MatchPositional(doc)
		_, changed, err := mod.Apply(doc, pos, false, h.deps.Clock.Now())
		return changed, err
	}
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
	return ex.ExplainWrite(executor.DryWrite{Stage: "DELETE", One: limit == 1}, r.db+"."+a.coll, v)
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
	w := executor.DryWrite{Stage: "DELETE", Sort: a.sort, SortSpec: spec, One: true}
	if !a.remove {
		w.Stage, w.Update, w.Upsert = "UPDATE", h.dryUpdate(a.filter, a.mod), a.upsert
	}
	return ex.ExplainWrite(w, r.db+"."+a.coll, v)
}
