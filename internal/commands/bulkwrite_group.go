package commands

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// A bulkWrite's consecutive updates, or deletes, of one namespace that
// each name one document by _id commit in groups, as the update and
// delete commands' statements do (stmtgroup.go), each op with its own
// result and retry record.

// writeRunLen is how many ops from the first are updates, or deletes,
// of the same namespace.
func writeRunLen(ops []bson.D) int {
	if len(ops[0]) == 0 || (ops[0][0].Key != "update" && ops[0][0].Key != "delete") {
		return 0
	}
	n := 0
	for _, op := range ops {
		if len(op) == 0 || op[0].Key != ops[0][0].Key || bsonutil.Compare(op[0].Value, ops[0][0].Value) != 0 {
			break
		}
		n++
	}
	return n
}

// writeRun commits run, the updates or deletes of one namespace from op
// start on, in a group. It returns how many ops it answered (none: op
// start runs alone), whether an ordered bulkWrite goes on, and an error
// that ends the command.
func (b *bulkWrite) writeRun(start int, run []bson.D) (taken int, goOn bool, err error) {
	kind := run[0][0].Key
	db, coll, err := b.namespace(run[0][0].Value)
	if err != nil || b.h.refuseView(db, coll) != nil || b.rt.retry() {
		return 0, true, nil
	}
	c := b.h.deps.Store.Collection(db, coll)
	stmts := b.runStatements(kind, run)
	if c == nil || !byIDShape(stmts, 0) {
		return 0, true, nil
	}
	rr := *b.r
	rr.db = db
	a := writeArgs{coll: coll, opt: b.opt}
	a.opt.Validate = b.h.documentValidator(db, coll, b.bypass)
	var g stmtGroup
	answer := b.gather(kind, &rr, a, stmts, &g)
	if err := checkInterrupt(b.r.ctx); err != nil {
		return 0, false, err
	}
	done, err := g.run(b.h, c, a.opt, b.rt, start)
	for k := range done {
		answer(start, k)
	}
	if err == nil || errors.Is(err, errAlone) {
		return done, true, nil
	}
	b.fail(start+done, kind, err)
	return done + 1, !b.ordered, nil
}

// runStatements are the ops of run as the command's statements, up to the
// first whose shape is wrong (it runs alone and fails there).
func (b *bulkWrite) runStatements(kind string, run []bson.D) []bson.D {
	stmtOf := updateStmtOf
	if kind == "delete" {
		stmtOf = deleteStmtOf
	}
	var stmts []bson.D
	for _, op := range run {
		stmt, err := stmtOf(op)
		if err != nil {
			break
		}
		stmts = append(stmts, stmt)
	}
	return stmts
}

// gather takes the run's statements into g and returns how to answer
// the k-th of them, op start+k, once committed.
func (b *bulkWrite) gather(kind string, r *request, a writeArgs, stmts []bson.D, g *stmtGroup) func(start, k int) {
	if kind == "delete" {
		removed := b.h.gatherDeletes(r, a, b.let, stmts, g)
		return func(start, k int) { b.deleted(start+k, b2i((*removed)[k])) }
	}
	effects := b.h.gatherUpdates(r, a, b.let, stmts, g)
	return func(start, k int) {
		e := effects[k]
		if e.upserted != nil {
			b.updated(start+k, 1, 0, e.upserted)
			return
		}
		b.updated(start+k, b2i(e.matched), b2i(e.modified), nil)
	}
}
