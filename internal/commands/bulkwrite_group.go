package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// A bulkWrite's consecutive ops of one kind on one namespace commit in
// groups through the statement runner (stmtgroup.go), as the insert,
// update and delete commands' statements do: inserts by
// docstore.InsertGroup, updates and deletes that each name one document
// by _id by docstore.ModifyEach, each op with its own result and retry
// record.

// group groups the ops from op i on, when a run of them can share one
// (nil: op i runs alone).
func (b *bulkWrite) group(i int) (*writeops.Group, error) {
	ops := b.ops[i:]
	if n := writeRunLen(ops); n > 1 {
		return b.writeGroup(i, ops[:n]), nil
	}
	if n := insertRunLen(ops); n > 1 {
		return b.insertGroup(i, ops[:n])
	}
	return nil, nil
}

// writeRunLen is how many ops from the first are updates, or deletes,
// of the same namespace.
func writeRunLen(ops []bson.D) int {
	if len(ops[0]) == 0 || (ops[0][0].Key != "update" && ops[0][0].Key != "delete") {
		return 0
	}
	return runLen(ops)
}

// insertRunLen is how many ops from the first are inserts into the same
// namespace.
func insertRunLen(ops []bson.D) int {
	if len(ops[0]) == 0 || ops[0][0].Key != "insert" {
		return 0
	}
	return runLen(ops)
}

// runLen is how many ops from the first are of its kind and namespace.
func runLen(ops []bson.D) int {
	n := 0
	for _, op := range ops {
		if len(op) == 0 || op[0].Key != ops[0][0].Key || bsonutil.Compare(op[0].Value, ops[0][0].Value) != 0 {
			break
		}
		n++
	}
	return n
}

// writeGroup groups run, the updates or deletes of one namespace from op
// start on, by _id.
func (b *bulkWrite) writeGroup(start int, run []bson.D) *writeops.Group {
	kind := run[0][0].Key
	db, coll, err := b.namespace(run[0][0].Value)
	if err != nil || b.h.refuseView(db, coll) != nil {
		return nil
	}
	if _, routed := b.routed[db+"."+coll]; routed {
		return nil // each op runs alone, with its namespace's ownership filter
	}
	stmts := b.runStatements(kind, run)
	if !byIDShape(stmts) {
		return nil
	}
	rr := *b.r
	rr.db = db
	a := writeArgs{coll: coll, opt: b.runner.Opt}
	if kind == "delete" {
		return b.h.deleteGroup(b.runner, &rr, a, b.let, stmts, start, func(k int, removed bool) { b.deleted(start+k, b2i(removed)) })
	}
	return b.h.updateGroup(b.runner, &rr, a, b.let, stmts, start, func(k int, e *writeops.UpdateEffect) {
		if e.Upserted != nil {
			b.updated(start+k, 1, 0, e.Upserted)
			return
		}
		b.updated(start+k, b2i(e.Matched), b2i(e.Modified), nil)
	})
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

// insertGroup groups run, the inserts into one namespace from op start
// on; nil when the namespace fails its checks (each insert then fails
// alone).
func (b *bulkWrite) insertGroup(start int, run []bson.D) (*writeops.Group, error) {
	c, opt, ok := b.insertTarget(run[0][0].Value)
	if !ok {
		return nil, nil
	}
	return b.runner.InsertGroup(nil, c, opt, b.ordered, start, start+len(run),
		func(j int) (bson.D, error) { return insertedDoc(b.ops[j]) },
		writeops.CommittedFunc(func(k int) {
			b.totals.inserted++
			b.ok(start+k, bson.D{{Key: "n", Value: int32(1)}})
		}))
}

// insertTarget is the collection that ns, an nsInfo index, names and the
// write options of its inserts; false when the namespace fails its checks
// or its collection cannot be made.
func (b *bulkWrite) insertTarget(ns any) (*docstore.Collection, docstore.WriteOptions, bool) {
	db, coll, err := b.namespace(ns)
	if err == nil {
		err = b.h.refuseView(db, coll)
	}
	if err != nil {
		return nil, docstore.WriteOptions{}, false
	}
	c, _, err := b.h.getOrCreate(b.r, db, coll)
	return c, b.runner.Opt, err == nil
}

// insertedDoc is an insert op's document, ready to insert.
func insertedDoc(op bson.D) (bson.D, error) {
	doc, ok := fieldDoc(op, "document")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'bulkWrite.insert.document' is missing but a required field")
	}
	return writeops.PrepareInsert(doc)
}
