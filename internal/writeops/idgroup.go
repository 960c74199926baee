package writeops

import (
	"bytes"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

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

// IDOnly returns the _id that q, a statement's filter, names when q is
// {_id: <value>} and the value matches by equality alone: not an
// operator, an array, a regex or null, and not a string that a collation
// compares.
func IDOnly(q bson.D, f *query.Filter) (any, bool) {
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

// IDGroup gathers a group's statements.
type IDGroup struct {
	stmts []idStmt
	held  map[string]bool
}

// add takes s into the group unless the group already holds its document.
func (g *IDGroup) add(s idStmt) bool {
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

// AddUpdate takes u, a one-document update of the document id, into the
// group unless the group already holds that document; its effect is
// known once the group commits.
func (g *IDGroup) AddUpdate(u *Update, id any) (*UpdateEffect, bool) {
	e := &UpdateEffect{}
	return e, g.add(idStmt{id: id, change: e.changeFn(u, id), record: e.record})
}

// AddDelete takes a one-document delete by f of the document id into the
// group unless the group already holds that document; *removed says,
// once the group commits, whether it removed the document.
func (g *IDGroup) AddDelete(f *query.Filter, id any) (removed *bool, ok bool) {
	removed = new(bool)
	change := func(doc bson.D, _ time.Time) (docstore.Change, error) {
		ch, matched, err := RemoveIfMatching(doc, f)
		*removed = matched
		return ch, err
	}
	return removed, g.add(idStmt{id: id, change: change, record: RecordN(1)})
}

// run commits the group's statements, the first of which is the command's
// statement first, in order: it returns how many it got through and the
// error of the statement after them (errAlone: that one runs alone).
func (g *IDGroup) run(s *Runner, c *docstore.Collection, opt docstore.WriteOptions, first int) (int, error) {
	n := len(g.stmts)
	ids := make([]any, n)
	wrote := make([]bool, n)
	var extras []func(storage.Batch) error
	if s.Txn != nil {
		extras = make([]func(storage.Batch) error, n)
	}
	for k, st := range g.stmts {
		ids[k] = st.id
		if s.Txn != nil {
			record := s.Txn.Record(first+k, st.record)
			extras[k] = func(b storage.Batch) error {
				if !wrote[k] {
					return nil // unchanged, as alone: nothing to record
				}
				return record(b)
			}
		}
	}
	now := s.Op.Now()
	return c.ModifyEach(ids, opt, extras, func(k int, doc bson.D) (docstore.Change, error) {
		ch, err := g.stmts[k].change(doc, now)
		wrote[k] = err == nil && ch.Kind != docstore.Keep
		return ch, err
	})
}

// ByIDGroup is the group of the statements gather takes, the first of
// them the write's statement first, into c with opt; nil when none can
// join one. A retry looks each statement up and runs it alone, and a
// collection that does not exist (c nil) has no document to name.
func (s *Runner) ByIDGroup(c *docstore.Collection, opt docstore.WriteOptions, first int, gather func(g *IDGroup), done func(k int)) *Group {
	if s.Txn.Retry() || c == nil {
		return nil
	}
	var g IDGroup
	gather(&g)
	if len(g.stmts) == 0 {
		return nil
	}
	return &Group{done: CommittedFunc(done), commit: commitFunc(func() ([]error, int) {
		errs := make([]error, len(g.stmts))
		n, err := g.run(s, c, opt, first)
		if err == nil {
			return errs, n
		}
		errs[n] = err
		return errs, n + 1
	})}
}

// UpdateEffect is what one grouped update statement did.
type UpdateEffect struct {
	Matched, Modified bool
	Upserted          any
}

// changeFn is the statement's change of its document, as updateOne and
// upsert make it alone.
func (e *UpdateEffect) changeFn(u *Update, id any) func(bson.D, time.Time) (docstore.Change, error) {
	return func(doc bson.D, now time.Time) (docstore.Change, error) {
		*e = UpdateEffect{}
		if doc != nil || !u.Upsert {
			ch, matched, changed, err := UpdateDoc(doc, u.Filter, u.Mod, now)
			e.Matched, e.Modified = matched, changed
			return ch, err
		}
		ins, err := UpsertDoc(u.Filter, u.Mod, now)
		if err == nil {
			ins, err = PrepareInsert(ins)
		}
		if err != nil {
			return docstore.Change{}, err
		}
		got, _ := bsonutil.Field(ins, "_id")
		if !bytes.Equal(keyenc.AppendValue(nil, got), keyenc.AppendValue(nil, id)) {
			return docstore.Change{}, errAlone
		}
		e.Upserted = got
		return docstore.Change{Kind: docstore.Insert, Doc: ins}, nil
	}
}

// record is the statement's retryable-write result.
func (e *UpdateEffect) record() bson.D {
	if e.Upserted != nil {
		return bson.D{{Key: "n", Value: int32(1)}, {Key: "upserted", Value: e.Upserted}}
	}
	return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}}
}
