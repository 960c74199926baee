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
	if err = checkFields(r, append(known, field, "ordered", "bypassDocumentValidation", "let", "bypassEmptyTsReplacement", "stmtIds")...); err != nil {
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
	bypass, err := bypassArg(r)
	if err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	var res writeResult
	run := h.commandRunner(r, &a, rt, bypass, &res)
	c, _, err := h.deps.Store.GetOrCreate(r.db, a.coll)
	if err != nil && failsBatch(err) {
		return nil, clientError(err)
	}
	if err != nil {
		// mongod reports a collection it cannot create (a database name
		// differing in case, 13297; a full disk) as each document's error.
		reply, err := h.finishWrite(a, failEach(len(docs), a.ordered, err))
		return withRetried(rt, reply), err
	}
	run.eachInterrupt = true
	run.interrupted = func(i int, err error) error {
		res.fail(i, err) // the documents before it stay inserted
		return nil
	}
	run.prior = func(int, bson.D) { res.n++ }
	run.gather = func(i int) (*stmtGroup, error) {
		return insertGroup(run, c, a.opt, a.ordered, i, len(docs), func(j int) (bson.D, error) {
			d := docs[j]
			if !a.keepEmptyTs {
				d = h.fillEmptyTimestamps(d)
			}
			return prepareForInsert(d)
		}, func(int) { res.n++ })
	}
	if err := run.run(len(docs)); err != nil {
		return nil, err
	}
	reply, err := h.finishWrite(a, &res)
	return withRetried(rt, reply), err
}

// insertGroup groups the inserts from statement i on, before statement
// n, for docstore.InsertGroup: each statement's document, which doc
// gives ready to insert (or its error, which ends the group in its
// place), or in a retry the record of one that ran before. done answers
// a committed statement. The group is never empty: statement i is not
// one a retry found.
func insertGroup(s *stmtRunner, c *docstore.Collection, opt docstore.WriteOptions, ordered bool, i, n int, doc func(j int) (bson.D, error), done func(k int)) (*stmtGroup, error) {
	g := &insertRun{c: c, ordered: ordered}
	for j := i; j < n && len(g.docs) < docstore.InsertGroupDocs; j++ {
		if j > i {
			rec, found, err := s.rt.Prior(j)
			if err != nil {
				return nil, err
			}
			if found {
				g.stmts, g.recs = append(g.stmts, insertStmt{doc: -1}), append(g.recs, rec)
				continue
			}
		}
		d, err := doc(j)
		if err != nil {
			g.stmts, g.recs = append(g.stmts, insertStmt{doc: -1, err: err}), append(g.recs, nil)
			break
		}
		g.stmts, g.recs = append(g.stmts, insertStmt{doc: len(g.docs)}), append(g.recs, nil)
		g.docs = append(g.docs, docstore.GroupDoc{Doc: d, Opt: recorded(s.rt, opt, j, recordN(1))})
	}
	return &stmtGroup{commit: g.commit, recs: g.recs, done: done}, nil
}

// insertRun is a group of inserts into one collection.
type insertRun struct {
	c       *docstore.Collection
	ordered bool
	docs    []docstore.GroupDoc
	stmts   []insertStmt
	recs    []bson.D // by statement: its record, when a retry found one
}

// insertStmt is one statement of an insertRun: its document's index in
// docs, or -1 for a record or a document that failed before the insert
// (err).
type insertStmt struct {
	doc int
	err error
}

// commit inserts the group's documents and gives each statement its
// result, up to an ordered write's first failure.
func (g *insertRun) commit() ([]error, int) {
	var docErrs []error
	attempted := 0
	if len(g.docs) > 0 {
		docErrs, attempted = g.c.InsertGroup(g.docs, g.ordered)
	}
	errs := make([]error, len(g.stmts))
	for k, st := range g.stmts {
		if st.doc < 0 {
			errs[k] = st.err
			continue
		}
		if st.doc >= attempted {
			return errs, k
		}
		errs[k] = docErrs[st.doc]
	}
	return errs, len(g.stmts)
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
