package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// The commands' side of the statement runner (writeops.Runner): each
// statement's result counted into the reply, and the statements that may
// join a group by _id parsed for it.

// statementFailed records statement i's failure, err (nil: it did not
// fail): whether an ordered command stops, or an error that ends it.
func statementFailed(a writeArgs, res *writeResult, i int, err error) (stop bool, cmdErr error) {
	switch {
	case err == nil:
		return false, nil
	case failsBatch(err):
		return true, clientError(err)
	}
	res.fail(i, err)
	return a.ordered, nil
}

// writeCmd is an insert, update or delete command's run of its
// statements into res: a failure is a write error, and an interrupt ends
// the command. Each command embeds it in the struct that is its runner's
// Statements, so that the run's state is one allocation rather than a
// closure per answer.
type writeCmd struct {
	run writeops.Runner
	h   *Handler
	r   *request
	a   writeArgs
	rt  *session.Txn
	res writeResult
	// stmtArr is the array of the command's statements when it has one,
	// as drivers send most (parseWriteArgsInto).
	stmtArr [1]bson.D
}

// start readies w to run r's statements, answered by stmts (the struct
// that embeds w). a's write options, with bypass, become the runner's.
func (w *writeCmd) start(h *Handler, r *request, a writeArgs, rt *session.Txn, bypass bool, stmts writeops.Statements) {
	a.opt.BypassValidation = bypass
	w.h, w.r, w.a, w.rt = h, r, a, rt
	w.run = writeops.Runner{Op: h.writeOp(r), Txn: rt, Opt: a.opt, Stmts: stmts}
}

// Interrupted ends the command with the interrupt's error.
func (w *writeCmd) Interrupted(_ int, err error) error { return err }

// Failed records statement i's failure (statementFailed).
func (w *writeCmd) Failed(i int, err error) (bool, error) {
	return statementFailed(w.a, &w.res, i, err)
}

// finish makes the command's writes durable as asked and is its reply.
func (w *writeCmd) finish() (bson.D, error) {
	reply, err := w.h.finishWrite(w.a, &w.res)
	return withRetried(w.rt, reply), err
}

// updateGroup groups the update statements from the first of stmts on,
// the write's statement first, that name one document by _id; answer
// gets each committed statement's effect. The caller has checked the
// statements' shape (byIDShape), before making answer.
func (h *Handler) updateGroup(run *writeops.Runner, r *request, a writeArgs, lv *letScope, stmts []bson.D, first int, answer func(k int, e *writeops.UpdateEffect)) *writeops.Group {
	var effects []*writeops.UpdateEffect
	return run.ByIDGroup(h.collection(r, r.db, a.coll), a.opt, first,
		func(g *writeops.IDGroup) { effects = h.gatherUpdates(r, a, lv, stmts, g) },
		func(k int) { answer(k, effects[k]) })
}

// gatherUpdates takes into g the update statements from the first of
// stmts on that can join it, and returns their effects.
func (h *Handler) gatherUpdates(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *writeops.IDGroup) []*writeops.UpdateEffect {
	var effects []*writeops.UpdateEffect
	for _, s := range stmts {
		st, id, ok := h.groupableUpdate(r, a, lv, s)
		if !ok {
			break
		}
		e, ok := g.AddUpdate(st.write(), id)
		if !ok {
			break
		}
		effects = append(effects, e)
	}
	return effects
}

// groupableUpdate parses an update statement that may join a group: one
// document, named by _id, with no sort and no hint.
func (h *Handler) groupableUpdate(r *request, a writeArgs, lv *letScope, s bson.D) (updateStmt, any, bool) {
	if !filtersByID(s) {
		return updateStmt{}, nil, false
	}
	st, err := h.parsedUpdate(r, a, lv, s)
	if err != nil || st.multi || st.sort != nil || st.hint != nil {
		return updateStmt{}, nil, false
	}
	id, ok := writeops.IDOnly(filterDoc(s), st.filter)
	return st, id, ok
}

// byIDShape says, without parsing them, whether the first two statements
// filter by _id alone: only then is a group worth parsing for. A command
// of one statement (a driver's updateOne) never is.
func byIDShape(stmts []bson.D) bool {
	return len(stmts) >= 2 && filtersByID(stmts[0]) && filtersByID(stmts[1])
}

// filtersByID says whether statement s's filter has the one field _id.
func filtersByID(s bson.D) bool {
	q := filterDoc(s)
	return len(q) == 1 && q[0].Key == "_id"
}

// filterDoc is a statement's filter, q.
func filterDoc(s bson.D) bson.D {
	q, _ := bsonutil.Field(s, "q")
	qd, _ := q.(bson.D)
	return qd
}

// countEffect adds grouped update statement i's effect to the command's
// result.
func countEffect(e *writeops.UpdateEffect, i int, res *writeResult) {
	if e.Upserted != nil {
		res.n++
		res.upserted = append(res.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: e.Upserted}})
		return
	}
	res.n += b2i(e.Matched)
	res.nModified += b2i(e.Modified)
}

// deleteGroup is updateGroup for delete statements; answer gets
// whether each committed statement removed its document.
func (h *Handler) deleteGroup(run *writeops.Runner, r *request, a writeArgs, lv *letScope, stmts []bson.D, first int, answer func(k int, removed bool)) *writeops.Group {
	var removed []*bool
	return run.ByIDGroup(h.collection(r, r.db, a.coll), a.opt, first,
		func(g *writeops.IDGroup) { removed = h.gatherDeletes(r, a, lv, stmts, g) },
		func(k int) { answer(k, *removed[k]) })
}

// gatherDeletes takes into g the delete statements from the first of
// stmts on that can join it; the result says which removed a document.
func (h *Handler) gatherDeletes(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *writeops.IDGroup) []*bool {
	var removed []*bool
	for _, s := range stmts {
		f, id, ok := h.groupableDelete(r, a, lv, s)
		if !ok {
			break
		}
		gone, ok := g.AddDelete(f, id)
		if !ok {
			break
		}
		removed = append(removed, gone)
	}
	return removed
}

// groupableDelete parses a delete statement that may join a group: one
// document (limit 1), named by _id, with no hint.
func (h *Handler) groupableDelete(r *request, a writeArgs, lv *letScope, s bson.D) (*query.Filter, any, bool) {
	if !filtersByID(s) {
		return nil, nil, false
	}
	f, limit, hint, err := parseDeleteStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil || limit != 1 || hint != nil {
		return nil, nil, false
	}
	id, ok := writeops.IDOnly(filterDoc(s), f)
	return guardFilter(r.ctx, f), id, ok
}
