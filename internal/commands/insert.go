package commands

import (
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/wire"
)

// writeResult accumulates a write command's reply.
type writeResult struct {
	n, nModified int64
	upserted     bson.A
	errors       bson.A
	// withModified adds nModified (and upserted) to the reply, for update.
	withModified bool
}

func (w *writeResult) fail(i int, err error) {
	w.errors = append(w.errors, mongoerr.WriteError(i, clientError(err)))
}

// failsBatch reports whether err fails a write command as a whole rather
// than its statement: mongod's interruptions by a replica set state change
// or a shutdown, and a primary that is no longer one, whose top-level code
// and RetryableWriteError label tell a driver to retry the command.
func failsBatch(err error) bool {
	return errors.Is(err, repl.ErrStateChange) || errors.Is(err, repl.ErrNotPrimary) || errors.Is(err, repl.ErrShutdown)
}

// failEach is the result of a batch none of whose statements could run:
// each fails with err, up to the first when the batch is ordered.
func failEach(n int, ordered bool, err error) *writeResult {
	res := &writeResult{}
	for i := range n {
		res.fail(i, err)
		if ordered {
			break
		}
	}
	return res
}

func (w *writeResult) reply(withModified bool) bson.D {
	out := bson.D{{Key: "n", Value: int32(w.n)}}
	if withModified {
		if len(w.upserted) > 0 {
			out = append(out, bson.E{Key: "upserted", Value: w.upserted})
		}
		out = append(out, bson.E{Key: "nModified", Value: int32(w.nModified)})
	}
	if len(w.errors) > 0 {
		out = append(out, bson.E{Key: "writeErrors", Value: w.errors})
	}
	return out
}

// statements reads a write command's array of statements and checks
// MongoDB's batch size limits.
func statements(r *request, field string) ([]bson.D, error) {
	v, ok := bsonutil.Field(r.body, field)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", r.name, field)
	}
	docs, err := docArray(r.name, field, v)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 || len(docs) > wire.MaxWriteBatchSize {
		return nil, mongoerr.Newf(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", wire.MaxWriteBatchSize, len(docs))
	}
	return docs, nil
}

func orderedArg(r *request) (bool, error) {
	v, ok := bsonutil.Field(r.body, "ordered")
	if !ok {
		return true, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, wrongType(r.name, "ordered", v, "bool")
	}
	return b, nil
}

// writeArgs are the arguments every write command shares. With j: true
// the statements' syncs are gathered (opt.Durable) and the command waits
// for them once at its end, as MongoDB applies a write concern to the
// command, not per document.
type writeArgs struct {
	coll    string
	ordered bool
	opt     docstore.WriteOptions
	// keepEmptyTs is bypassEmptyTsReplacement: top-level Timestamp(0, 0)
	// values are stored as given instead of filled with the time, as
	// mongorestore and mongoimport ask.
	keepEmptyTs bool
}

// finishWrite makes the command's writes durable when j: true (or
// w: "majority") was asked for.
func (h *Handler) finishWrite(a writeArgs, res *writeResult) (bson.D, error) {
	if a.opt.Durable != nil {
		if err := h.deps.Store.WaitDurable(a.opt.Durable); err != nil {
			return nil, err
		}
	}
	return res.reply(res.withModified), nil
}

func parseWriteArgs(r *request, field string, known ...string) (writeArgs, []bson.D, error) {
	var a writeArgs
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return a, nil, err
	}
	if err = checkFields(r, append(known, field, "ordered", "bypassDocumentValidation", "let", "bypassEmptyTsReplacement")...); err != nil {
		return a, nil, err
	}
	if a.keepEmptyTs, err = optBool(r, "bypassEmptyTsReplacement"); err != nil {
		return a, nil, err
	}
	if a.ordered, err = orderedArg(r); err != nil {
		return a, nil, err
	}
	journal, err := syncRequested(r)
	if err != nil {
		return a, nil, err
	}
	if journal {
		a.opt.Durable = &docstore.Durability{}
	}
	stmts, err := statements(r, field)
	return a, stmts, err
}

func cmdInsert(h *Handler, r *request) (bson.D, error) {
	a, docs, err := parseWriteArgs(r, "documents")
	if err != nil {
		return nil, err
	}
	if err := docstore.ValidateNamespace(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := docstore.ValidateUserWrite(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, a.coll); err != nil {
		return nil, err
	}
	if a.opt.Validate, err = h.commandValidator(r, a.coll); err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	c, _, err := h.deps.Store.GetOrCreate(r.db, a.coll)
	if err != nil && failsBatch(err) {
		return nil, clientError(err)
	}
	if err != nil {
		// mongod reports a collection it cannot create (a database name
		// differing in case, 13297; a full disk) as each document's error.
		reply, err := h.finishWrite(a, failEach(len(docs), a.ordered, err))
		return rt.reply(reply), err
	}
	var res writeResult
	if err := h.insertDocs(r, &a, rt, c, docs, &res); err != nil {
		return nil, err
	}
	reply, err := h.finishWrite(a, &res)
	return rt.reply(reply), err
}

// insertDocs inserts an insert command's documents into res, gathered in
// groups that commit together (docstore.InsertGroup). A document's own
// failure comes after those before it have committed, so that the write
// errors stay in statement order and an ordered write stops at the first.
func (h *Handler) insertDocs(r *request, a *writeArgs, rt *retryTxn, c *docstore.Collection, docs []bson.D, res *writeResult) error {
	g := insertGroup{c: c, ordered: a.ordered}
	for i, d := range docs {
		if err := checkInterrupt(r.ctx); err != nil {
			_, ferr := g.failAfter(res, i, err)
			return ferr
		}
		if !a.keepEmptyTs {
			d = h.fillEmptyTimestamps(d)
		}
		if _, done, err := rt.prior(i); err != nil {
			return err
		} else if done {
			res.n++
			continue
		}
		doc, err := prepareForInsert(d)
		if err != nil {
			if stop, ferr := g.failAfter(res, i, err); stop || ferr != nil || a.ordered {
				return ferr
			}
			continue
		}
		g.add(i, doc, rt.options(a.opt, i, recordN(1)))
		if len(g.docs) == docstore.InsertGroupDocs {
			if stop, err := g.flush(res); stop || err != nil {
				return err
			}
		}
	}
	_, err := g.flush(res)
	return err
}

// insertGroup gathers an insert command's documents for
// docstore.InsertGroup.
type insertGroup struct {
	c       *docstore.Collection
	ordered bool
	docs    []docstore.GroupDoc
	stmts   []int // each document's statement index
}

func (g *insertGroup) add(stmt int, doc bson.D, opt docstore.WriteOptions) {
	g.docs = append(g.docs, docstore.GroupDoc{Doc: doc, Opt: opt})
	g.stmts = append(g.stmts, stmt)
}

// failAfter inserts the documents gathered before statement i, then
// records i's own failure err, unless the insert stopped an ordered write.
func (g *insertGroup) failAfter(res *writeResult, i int, err error) (stop bool, _ error) {
	if stop, ferr := g.flush(res); stop || ferr != nil {
		return true, ferr
	}
	if failsBatch(err) {
		return true, clientError(err)
	}
	res.fail(i, err)
	return false, nil
}

// flush inserts the gathered documents, counting them into res; stop
// reports an ordered write's first failure.
func (g *insertGroup) flush(res *writeResult) (stop bool, err error) {
	if len(g.docs) == 0 {
		return false, nil
	}
	errs, attempted := g.c.InsertGroup(g.docs, g.ordered)
	stmts := g.stmts
	g.docs, g.stmts = g.docs[:0], g.stmts[:0]
	for k, err := range errs[:attempted] {
		switch {
		case err == nil:
			res.n++
		case failsBatch(err):
			return true, clientError(err)
		default:
			res.fail(stmts[k], err)
			stop = g.ordered
		}
	}
	return stop, nil
}

func insertOne(c *docstore.Collection, d bson.D, opt docstore.WriteOptions) error {
	doc, err := prepareForInsert(d)
	if err != nil {
		return err
	}
	return c.Insert(doc, opt)
}

// prepareForInsert gives d its _id and checks what a stored document may
// hold.
func prepareForInsert(d bson.D) (bson.D, error) {
	doc, err := docstore.PrepareInsert(d)
	if err != nil {
		return nil, err
	}
	if err := checkStorableFields(doc); err != nil {
		return nil, err
	}
	if nestingDepth(doc) > maxStorageDepth {
		return nil, mongoerr.Newf(mongoerr.Overflow, "cannot insert document because it exceeds %d levels of nesting", maxStorageDepth)
	}
	return doc, nil
}

// maxStorageDepth is MongoDB's nesting limit for stored documents: the wire
// limit (200) less room for the levels the server adds around a document.
const maxStorageDepth = 180

// nestingDepth counts the levels of non-empty documents and arrays in v,
// the document itself included; empty ones do not count, as in MongoDB.
func nestingDepth(v any) int {
	var children []any
	switch x := v.(type) {
	case bson.D:
		for _, e := range x {
			children = append(children, e.Value)
		}
	case bson.A:
		children = x
	default:
		return 0
	}
	if len(children) == 0 {
		return 0
	}
	deepest := 0
	for _, c := range children {
		deepest = max(deepest, nestingDepth(c))
	}
	return 1 + deepest
}

// checkStorableFields applies MongoDB's (5.0+) rules for field names of
// a stored document: $-prefixed and dotted names are allowed, at the top
// level and below, except inside _id, which must not look like an
// operator document; and one _id only.
func checkStorableFields(doc bson.D) error {
	ids := 0
	for _, e := range doc {
		if e.Key == "_id" {
			ids++
		}
	}
	if ids > 1 {
		return mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
	}
	id, ok := bsonutil.Field(doc, "_id")
	if !ok {
		return nil
	}
	if d, isDoc := id.(bson.D); isDoc {
		for _, e := range d {
			if strings.HasPrefix(e.Key, "$") {
				return mongoerr.Newf(mongoerr.DollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", e.Key)
			}
		}
	}
	return nil
}
