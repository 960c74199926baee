package commands

import (
	"bytes"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

// The statements of an update or delete command that each name one
// document by its _id alone commit in groups (docstore.ModifyEach), as an
// insert command's documents do: on a replica set one raft round for up
// to 64 statements, not one for each. A driver's bulkWrite of updateOne,
// replaceOne and deleteOne by _id sends such commands, and so do the
// tools that import with upserts. A group ends before a statement that
// names a document it already holds, so each statement meets the ones
// before it as it would one by one, and before any statement not of that
// shape, which runs alone as before. A retryable statement's record
// commits in the batch of its own change.

// idStmt is one statement of a group.
type idStmt struct {
	id    any
	idEnc []byte
	// change is the statement's change of its document (nil when none
	// lives), as it would make it alone; it also notes its own result.
	change func(doc bson.D, now time.Time) (docstore.Change, error)
	// record is the statement's retryable-write result.
	record func() bson.D
}

// errAlone, from a statement's change, says that the statement cannot
// commit in a group exactly as it would alone (an upsert whose document
// has another _id): it runs alone.
var errAlone = errors.New("commands: this statement runs alone")

// idOnly returns the _id that q, a statement's filter, names when q is
// {_id: <value>} and the value matches by equality alone: not an
// operator, an array, a regex or null, and not a string that a collation
// compares.
func idOnly(q bson.D, f *query.Filter) (any, bool) {
	if len(q) != 1 || q[0].Key != "_id" {
		return nil, false
	}
	switch q[0].Value.(type) {
	case string:
		return q[0].Value, !f.Collated()
	case int32, int64, float64, bson.Decimal128, bson.ObjectID, bson.DateTime, bool, bson.Binary, bson.Timestamp:
		return q[0].Value, true
	}
	return nil, false
}

// byIDShape says, without parsing them, whether statement i and the one
// after it filter by _id alone: only then is a group worth parsing for. A
// command of one statement (a driver's updateOne) never is.
func byIDShape(stmts []bson.D, i int) bool {
	if i+1 >= len(stmts) {
		return false
	}
	for _, s := range stmts[i : i+2] {
		q, _ := bsonutil.Field(s, "q")
		if qd, _ := q.(bson.D); len(qd) != 1 || qd[0].Key != "_id" {
			return false
		}
	}
	return true
}

// stmtGroup gathers a group's statements.
type stmtGroup struct {
	stmts []idStmt
	held  map[string]bool
}

// add takes s into the group unless the group already holds its document.
func (g *stmtGroup) add(s idStmt) bool {
	s.idEnc = keyenc.AppendValue(nil, s.id)
	if g.held == nil {
		g.held = map[string]bool{}
	}
	if g.held[string(s.idEnc)] {
		return false
	}
	g.held[string(s.idEnc)] = true
	g.stmts = append(g.stmts, s)
	return true
}

// run commits the group's statements, the first of which is the command's
// statement first, in order: it returns how many it got through and the
// error of the statement after them (errAlone: that one runs alone).
func (g *stmtGroup) run(h *Handler, c *docstore.Collection, opt docstore.WriteOptions, rt *retryTxn, first int) (int, error) {
	n := len(g.stmts)
	ids := make([]any, n)
	wrote := make([]bool, n)
	var extras []func(storage.Batch) error
	if rt != nil {
		extras = make([]func(storage.Batch) error, n)
	}
	for k, s := range g.stmts {
		ids[k] = s.id
		if rt != nil {
			record := rt.options(docstore.WriteOptions{}, first+k, s.record).Extra
			extras[k] = func(b storage.Batch) error {
				if !wrote[k] {
					return nil // unchanged, as alone: nothing to record
				}
				return record(b)
			}
		}
	}
	now := h.deps.Clock.Now()
	return c.ModifyEach(ids, opt, extras, func(k int, doc bson.D) (docstore.Change, error) {
		ch, err := g.stmts[k].change(doc, now)
		wrote[k] = err == nil && ch.Kind != docstore.Keep
		return ch, err
	})
}

// statementSteps are how a write command answers a statement: from a
// retry's record (prior), in a group with those after it (group), or
// alone.
type statementSteps struct {
	prior func(i int, rec bson.D)
	group func(i int) (groupEnd, error)
	alone func(i int) (stop bool, err error)
}

// groupEnd is how a group from statement i ended: it took taken
// statements; alone says the one after them runs alone; stop that an
// ordered command stops.
type groupEnd struct {
	taken       int
	alone, stop bool
}

// writeStatements runs a write command's n statements in order; an
// error ends the command.
func writeStatements(n int, rt *retryTxn, steps statementSteps) error {
	for i := 0; i < n; {
		if rec, done, err := rt.prior(i); err != nil || done {
			if err != nil {
				return err
			}
			steps.prior(i, rec)
			i++
			continue
		}
		end, err := steps.group(i)
		if err != nil || end.stop {
			return err
		}
		if i += end.taken; end.taken > 0 && !end.alone {
			continue
		}
		if stop, err := steps.alone(i); err != nil || stop {
			return err
		}
		i++
	}
	return nil
}

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

// commitGroup commits, from statement i on, the statements gather takes
// into g (none when statement i is not of the shape), and counts the
// first done of them with count. Neither function outlives the call, so
// a command's result stays on its stack.
func (h *Handler) commitGroup(r *request, a writeArgs, stmts []bson.D, i int, res *writeResult, rt *retryTxn, gather func(g *stmtGroup), count func(done int)) (groupEnd, error) {
	if !byIDShape(stmts, i) || rt.retry() {
		return groupEnd{}, nil
	}
	c := h.deps.Store.Collection(r.db, a.coll)
	if c == nil {
		return groupEnd{}, nil
	}
	var g stmtGroup
	gather(&g)
	if len(g.stmts) == 0 {
		return groupEnd{}, nil
	}
	if err := checkInterrupt(r.ctx); err != nil {
		return groupEnd{}, err
	}
	done, err := g.run(h, c, a.opt, rt, i)
	count(done)
	if err == nil {
		return groupEnd{taken: done}, nil
	}
	if errors.Is(err, errAlone) {
		return groupEnd{taken: done, alone: true}, nil
	}
	stop, cmdErr := statementFailed(a, res, i+done, err)
	return groupEnd{taken: done + 1, stop: stop}, cmdErr
}

// updateGroup commits, from statement i on, the update statements that
// name one document by _id, in a group.
func (h *Handler) updateGroup(r *request, a writeArgs, lv *letScope, stmts []bson.D, i int, res *writeResult, rt *retryTxn) (groupEnd, error) {
	var effects []*updateEffect
	return h.commitGroup(r, a, stmts, i, res, rt,
		func(g *stmtGroup) { effects = h.gatherUpdates(r, a, lv, stmts[i:], g) },
		func(done int) {
			for k, e := range effects[:done] {
				e.count(i+k, res)
			}
		})
}

// gatherUpdates takes into g the update statements from the first of
// stmts on that can join it, and returns their effects.
func (h *Handler) gatherUpdates(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *stmtGroup) []*updateEffect {
	var effects []*updateEffect
	for _, s := range stmts {
		st, id, ok := h.groupableUpdate(r, a, lv, s)
		if !ok {
			break
		}
		e := &updateEffect{}
		if !g.add(idStmt{id: id, change: e.changeFn(st, id), record: e.record}) {
			break
		}
		effects = append(effects, e)
	}
	return effects
}

// groupableUpdate parses an update statement that may join a group: one
// document, named by _id, with no sort and no hint.
func (h *Handler) groupableUpdate(r *request, a writeArgs, lv *letScope, s bson.D) (*updateStmt, any, bool) {
	q, _ := bsonutil.Field(s, "q")
	qd, _ := q.(bson.D)
	if len(qd) != 1 || qd[0].Key != "_id" {
		return nil, nil, false
	}
	st, err := h.parsedUpdate(r, a, lv, s)
	if err != nil || st.multi || st.sort != nil || st.hint != nil {
		return nil, nil, false
	}
	id, ok := idOnly(qd, st.filter)
	return st, id, ok
}

// updateEffect is what one grouped update statement did.
type updateEffect struct {
	matched, modified bool
	upserted          any
}

// changeFn is the statement's change of its document, as updateOne and
// upsert make it alone.
func (e *updateEffect) changeFn(st *updateStmt, id any) func(bson.D, time.Time) (docstore.Change, error) {
	return func(doc bson.D, now time.Time) (docstore.Change, error) {
		*e = updateEffect{}
		if doc != nil || !st.upsert {
			ch, matched, changed, err := updateDoc(doc, st.filter, st.mod, now)
			e.matched, e.modified = matched, changed
			return ch, err
		}
		ins, err := upsertDoc(st.filter, st.mod, now)
		if err == nil {
			ins, err = prepareForInsert(ins)
		}
		if err != nil {
			return docstore.Change{}, err
		}
		got, _ := bsonutil.Field(ins, "_id")
		if !bytes.Equal(keyenc.AppendValue(nil, got), keyenc.AppendValue(nil, id)) {
			return docstore.Change{}, errAlone
		}
		e.upserted = got
		return docstore.Change{Kind: docstore.Insert, Doc: ins}, nil
	}
}

// record is the statement's retryable-write result.
func (e *updateEffect) record() bson.D {
	if e.upserted != nil {
		return bson.D{{Key: "n", Value: int32(1)}, {Key: "upserted", Value: e.upserted}}
	}
	return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}}
}

// count adds statement i's effect to the command's result.
func (e *updateEffect) count(i int, res *writeResult) {
	if e.upserted != nil {
		res.n++
		res.upserted = append(res.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: e.upserted}})
		return
	}
	res.n += b2i(e.matched)
	res.nModified += b2i(e.modified)
}

// deleteGroup is updateGroup for a delete command's statements.
func (h *Handler) deleteGroup(r *request, a writeArgs, lv *letScope, stmts []bson.D, i int, res *writeResult, rt *retryTxn) (groupEnd, error) {
	var removed *[]bool
	return h.commitGroup(r, a, stmts, i, res, rt,
		func(g *stmtGroup) { removed = h.gatherDeletes(r, a, lv, stmts[i:], g) },
		func(done int) {
			for _, gone := range (*removed)[:done] {
				res.n += b2i(gone)
			}
		})
}

// gatherDeletes takes into g the delete statements from the first of
// stmts on that can join it; the result says which removed a document.
func (h *Handler) gatherDeletes(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *stmtGroup) *[]bool {
	removed := new([]bool)
	for _, s := range stmts {
		f, id, ok := h.groupableDelete(r, a, lv, s)
		if !ok || !g.add(idStmt{id: id, change: removeIfMatching(f, removed, len(*removed)), record: recordN(1)}) {
			break
		}
	}
	return removed
}

// removeIfMatching is a grouped delete statement's change: the document
// goes if it matches f, which (*removed)[k] notes.
func removeIfMatching(f *query.Filter, removed *[]bool, k int) func(bson.D, time.Time) (docstore.Change, error) {
	*removed = append(*removed, false)
	return func(doc bson.D, _ time.Time) (docstore.Change, error) {
		(*removed)[k] = false
		if doc == nil {
			return docstore.Change{}, nil
		}
		if ok, err := f.MatchErr(doc); !ok || err != nil {
			return docstore.Change{}, err
		}
		(*removed)[k] = true
		return docstore.Change{Kind: docstore.Remove}, nil
	}
}

// groupableDelete parses a delete statement that may join a group: one
// document (limit 1), named by _id, with no hint.
func (h *Handler) groupableDelete(r *request, a writeArgs, lv *letScope, s bson.D) (*query.Filter, any, bool) {
	q, _ := bsonutil.Field(s, "q")
	qd, _ := q.(bson.D)
	if len(qd) != 1 || qd[0].Key != "_id" {
		return nil, nil, false
	}
	f, limit, hint, err := parseDeleteStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil || limit != 1 || hint != nil {
		return nil, nil, false
	}
	id, ok := idOnly(qd, f)
	return f.Guarded(newGuard(r.ctx)), id, ok
}
