package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// A bulkWrite's consecutive inserts into one namespace commit in groups
// (docstore.InsertGroup), as an insert command's documents do: in a
// replica set one raft round for each group, not for each document.

// insertRunLen is how many ops from the first are inserts into the same
// namespace.
func insertRunLen(ops []bson.D) int {
	n := 0
	for _, op := range ops {
		if len(op) == 0 || op[0].Key != "insert" || bsonutil.Compare(op[0].Value, ops[0][0].Value) != 0 {
			break
		}
		n++
	}
	return n
}

// insertRun runs run, the inserts from op number start on, into their
// namespace. It reports false when an ordered bulkWrite must stop, and an
// error that ends the command (an interrupt).
func (b *bulkWrite) insertRun(start int, run []bson.D) (goOn bool, err error) {
	c, opt, ok := b.insertTarget(run[0][0].Value)
	if !ok {
		// A namespace that fails its checks fails each insert as one alone.
		for k, op := range run {
			if !b.run(start+k, op) && b.ordered {
				return false, nil
			}
		}
		return true, nil
	}
	g := bulkInserts{b: b, c: c}
	for k, op := range run {
		if err := checkInterrupt(b.r.ctx); err != nil {
			return false, err
		}
		i := start + k
		if !g.next(i, op, opt) && b.ordered {
			return false, nil
		}
		if len(g.docs) == docstore.InsertGroupDocs && !g.flush() && b.ordered {
			return false, nil
		}
	}
	return g.flush() || !b.ordered, nil
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
	c, _, err := b.h.deps.Store.GetOrCreate(db, coll)
	opt := b.opt
	opt.Validate = b.h.documentValidator(db, coll, b.bypass)
	return c, opt, err == nil
}

// bulkInserts gathers a run's documents for docstore.InsertGroup.
type bulkInserts struct {
	b    *bulkWrite
	c    *docstore.Collection
	docs []docstore.GroupDoc
	idxs []int
}

// next takes op i: its document into the group, or, when it was done
// before (a retry) or fails its checks, its result after the group's.
func (g *bulkInserts) next(i int, op bson.D, opt docstore.WriteOptions) bool {
	prior, done, err := g.b.rt.prior(i)
	if err == nil && !done {
		var doc bson.D
		if doc, err = insertedDoc(op); err == nil {
			g.docs = append(g.docs, docstore.GroupDoc{Doc: doc, Opt: g.b.rt.options(opt, i, recordN(1))})
			g.idxs = append(g.idxs, i)
			return true
		}
	}
	if !g.flush() && g.b.ordered {
		return false
	}
	if err != nil {
		return g.b.fail(i, "insert", err)
	}
	return g.b.retried(i, "insert", prior)
}

// insertedDoc is an insert op's document, ready to insert.
func insertedDoc(op bson.D) (bson.D, error) {
	doc, ok := fieldDoc(op, "document")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'bulkWrite.insert.document' is missing but a required field")
	}
	return prepareForInsert(doc)
}

// flush inserts the gathered documents and records each one's result; it
// reports false after a failure.
func (g *bulkInserts) flush() bool {
	if len(g.docs) == 0 {
		return true
	}
	errs, attempted := g.c.InsertGroup(g.docs, g.b.ordered)
	idxs := g.idxs
	g.docs, g.idxs = g.docs[:0], g.idxs[:0]
	ok := true
	for k, err := range errs[:attempted] {
		if err != nil {
			ok = g.b.fail(idxs[k], "insert", err)
			continue
		}
		g.b.totals.inserted++
		g.b.ok(idxs[k], bson.D{{Key: "n", Value: int32(1)}})
	}
	return ok
}
