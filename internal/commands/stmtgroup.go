package commands

import (
	"bytes"
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/storage"
)

// The statement runner. Every write command's statements (insert, update,
// delete, and bulkWrite's ops) go through one loop: a statement that a
// retried txnNumber already ran answers from its record; the others
// commit in groups of one batch (on a replica set one raft round) with
// the statements after them that can join, or run alone. Inserts group
// by docstore.InsertGroup (insert.go); updates and deletes that each name
// one document by its _id alone group by docstore.ModifyEach (below). A
// group keeps each statement's own result, write error and retry record,
// so a command answers exactly as its statements sent one by one.

// stmtRunner runs a write's statements in order. What differs between
// the commands is in its functions: how a statement groups, runs alone,
// and answers.
type stmtRunner struct {
	h   *Handler
	ctx context.Context
	rt  *session.Txn // a retryable write's, or nil
	// opt are the command's write options (durability).
	opt    docstore.WriteOptions
	bypass bool // bypassDocumentValidation
	// eachInterrupt looks for an interrupt before every statement, not
	// only before a group commits.
	eachInterrupt bool
	// interrupted answers an interrupt met at statement i: the error that
	// ends the command, or nil to stop the write there.
	interrupted func(i int, err error) error
	// prior answers statement i from its first attempt's record.
	prior func(i int, rec bson.D)
	// gather groups the statements from i on; nil when statement i runs
	// alone. An error ends the command.
	gather func(i int) (*stmtGroup, error)
	// alone runs statement i by itself.
	alone func(i int) (stop bool, err error)
	// failed records statement i's failure: whether the write stops, or
	// an error that ends the command.
	failed func(i int, err error) (stop bool, cmdErr error)
}

// stmtGroup is the statements from one on that commit together.
type stmtGroup struct {
	// commit writes the group: each statement's error (nil: it
	// committed; errAlone: it runs alone) and how many have a result.
	commit func() (errs []error, attempted int)
	// recs answer the statements a retry found recorded (nil: not).
	recs []bson.D
	// done answers the group's k-th statement, committed.
	done func(k int)
}

// errAlone, from a statement of a group, says that the statement cannot
// commit in a group exactly as it would alone (an upsert whose document
// has another _id): it runs alone.
var errAlone = errors.New("commands: this statement runs alone")

// options are the write options of a statement into db.coll: the
// collection's rules apply in the docstore unless the command bypasses
// its validator.
func (s *stmtRunner) options(db, coll string) docstore.WriteOptions {
	opt := s.opt
	opt.BypassValidation = s.bypass
	return opt
}

// run answers statements 0 to n-1; an error ends the command.
func (s *stmtRunner) run(n int) error {
	for i := 0; i < n; {
		if s.eachInterrupt {
			if stop, err := s.interrupt(i); stop {
				return err
			}
		}
		if rec, done, err := s.rt.Prior(i); err != nil || done {
			if err != nil {
				return err
			}
			s.prior(i, rec)
			i++
			continue
		}
		taken, alone, stop, err := s.group(i)
		if err != nil || stop {
			return err
		}
		if i += taken; taken > 0 && !alone {
			continue
		}
		if stop, err := s.alone(i); err != nil || stop {
			return err
		}
		i++
	}
	return nil
}

// interrupt answers an interrupt of the command met at statement i:
// stop says that the write ends there.
func (s *stmtRunner) interrupt(i int) (stop bool, err error) {
	if err := checkInterrupt(s.ctx); err != nil {
		return true, s.interrupted(i, err)
	}
	return false, nil
}

// group commits the group from statement i, if any, and answers its
// statements: it returns how many it took; alone says the one after
// them runs alone, stop that the write stops.
func (s *stmtRunner) group(i int) (taken int, alone, stop bool, err error) {
	g, err := s.gather(i)
	if err != nil || g == nil {
		return 0, false, err != nil, err
	}
	if stop, err := s.interrupt(i); stop {
		return 0, false, true, err
	}
	errs, attempted := g.commit()
	for k, err := range errs[:attempted] {
		switch {
		case k < len(g.recs) && g.recs[k] != nil:
			s.prior(i+k, g.recs[k])
		case err == nil:
			g.done(k)
		case errors.Is(err, errAlone):
			return k, true, false, nil
		default:
			if stop, cmdErr := s.failed(i+k, err); stop || cmdErr != nil {
				return k + 1, false, true, cmdErr
			}
		}
	}
	return attempted, false, false, nil
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

// commandRunner is the runner of an insert, update or delete command's
// statements into res: a failure is a write error, and an interrupt ends
// the command.
func (h *Handler) commandRunner(r *request, a *writeArgs, rt *session.Txn, bypass bool, res *writeResult) *stmtRunner {
	s := &stmtRunner{h: h, ctx: r.ctx, rt: rt, opt: a.opt, bypass: bypass,
		interrupted: func(_ int, err error) error { return err },
		failed:      func(i int, err error) (bool, error) { return statementFailed(*a, res, i, err) },
	}
	a.opt = s.options(r.db, a.coll)
	return s
}

// Updates and deletes by _id. The statements of an update or delete
// command (or a bulkWrite's run of them on one namespace) that each name
// one document by its _id alone commit in groups (docstore.ModifyEach):
// a driver's bulkWrite of updateOne, replaceOne and deleteOne by _id
// sends such commands, and so do the tools that import with upserts. A
// group ends before a statement that names a document it already holds,
// so each statement meets the ones before it as it would one by one, and
// before any statement not of that shape, which runs alone. A retryable
// statement's record commits in the batch of its own change.

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

// idGroup gathers a group's statements.
type idGroup struct {
	stmts []idStmt
	held  map[string]bool
}

// add takes s into the group unless the group already holds its document.
func (g *idGroup) add(s idStmt) bool {
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
func (g *idGroup) run(h *Handler, c *docstore.Collection, opt docstore.WriteOptions, rt *session.Txn, first int) (int, error) {
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
			record := rt.Record(first+k, s.record)
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

// byIDGroup is the group of the statements gather takes, the first of
// them the write's statement first, in a.coll; nil when none can join
// one. A retry looks each statement up and runs it alone, and a
// collection that does not exist has no document to name.
func (h *Handler) byIDGroup(r *request, a writeArgs, rt *session.Txn, first int, gather func(g *idGroup), done func(k int)) *stmtGroup {
	if rt.Retry() {
		return nil
	}
	c := h.deps.Store.Collection(r.db, a.coll)
	if c == nil {
		return nil
	}
	var g idGroup
	gather(&g)
	if len(g.stmts) == 0 {
		return nil
	}
	return &stmtGroup{done: done, commit: func() ([]error, int) {
		errs := make([]error, len(g.stmts))
		n, err := g.run(h, c, a.opt, rt, first)
		if err == nil {
			return errs, n
		}
		errs[n] = err
		return errs, n + 1
	}}
}

// updateGroup groups the update statements from the first of stmts on,
// the write's statement first, that name one document by _id; answer
// gets each committed statement's effect.
func (h *Handler) updateGroup(r *request, a writeArgs, lv *letScope, stmts []bson.D, first int, rt *session.Txn, answer func(k int, e *updateEffect)) *stmtGroup {
	if !byIDShape(stmts, 0) {
		return nil
	}
	var effects []*updateEffect
	return h.byIDGroup(r, a, rt, first,
		func(g *idGroup) { effects = h.gatherUpdates(r, a, lv, stmts, g) },
		func(k int) { answer(k, effects[k]) })
}

// gatherUpdates takes into g the update statements from the first of
// stmts on that can join it, and returns their effects.
func (h *Handler) gatherUpdates(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *idGroup) []*updateEffect {
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

// deleteGroup is updateGroup for delete statements; answer gets
// whether each committed statement removed its document.
func (h *Handler) deleteGroup(r *request, a writeArgs, lv *letScope, stmts []bson.D, first int, rt *session.Txn, answer func(k int, removed bool)) *stmtGroup {
	if !byIDShape(stmts, 0) {
		return nil
	}
	var removed *[]bool
	return h.byIDGroup(r, a, rt, first,
		func(g *idGroup) { removed = h.gatherDeletes(r, a, lv, stmts, g) },
		func(k int) { answer(k, (*removed)[k]) })
}

// gatherDeletes takes into g the delete statements from the first of
// stmts on that can join it; the result says which removed a document.
func (h *Handler) gatherDeletes(r *request, a writeArgs, lv *letScope, stmts []bson.D, g *idGroup) *[]bool {
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
