package commands

import (
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/wire"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// writeResult accumulates a write command's reply.
type writeResult struct {
	n, nModified int64
	upserted     bson.A
	errors       bson.A
	// withModified adds nModified (and upserted) to the reply, for update.
	withModified bool
	// replyArr is the array of the first reply, made with the result (a
	// command makes one); replied says it has been taken.
	replyArr [2 + replyRoom]bson.E
	replied  bool
}

func (w *writeResult) fail(i int, err error) {
	w.errors = append(w.errors, mongoerr.WriteError(i, clientError(err)))
}

// failsBatch reports whether err fails a write command as a whole rather
// than its statement, as mongod's write commands rethrow it: an
// interruption (mongod's Interruption category: maxTimeMS, killOp, a
// disconnect, a shutdown, a replica set state change) and a primary that
// is no longer one. A retryable one's top-level code and
// RetryableWriteError label tell a driver to retry the command.
func failsBatch(err error) bool {
	if errors.Is(err, repl.ErrStateChange) || errors.Is(err, repl.ErrNotPrimary) || errors.Is(err, repl.ErrShutdown) {
		return true
	}
	me := mongoerr.As(clientError(err))
	return me != nil && me.Code.IsInterruption()
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
	out := w.replyArr[:0]
	if w.replied {
		out = make(bson.D, 0, 2+replyRoom)
	}
	w.replied = true
	out = append(out, bson.E{Key: "n", Value: int32(w.n)})
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
	return appendStatements(nil, r, field)
}

// appendStatements is statements appended to dst.
func appendStatements(dst []bson.D, r *request, field string) ([]bson.D, error) {
	v, ok := bsonutil.Field(r.body, field)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", r.name, field)
	}
	docs, err := cmdargs.AppendDocArray(dst, r.name, field, v)
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

// isWriteArg reports whether key is a field every write command takes
// besides its statements.
func isWriteArg(key string) bool {
	switch key {
	case "ordered", "bypassDocumentValidation", "let", "bypassEmptyTsReplacement", "stmtIds":
		return true
	}
	return false
}

func parseWriteArgs(r *request, field string, known ...string) (writeArgs, []bson.D, error) {
	return parseWriteArgsInto(nil, r, field, known...)
}

// parseWriteArgsInto is parseWriteArgs with the statements appended to
// dst: a writeCmd's stmtArr, which holds the usual one.
func parseWriteArgsInto(dst []bson.D, r *request, field string, known ...string) (writeArgs, []bson.D, error) {
	var a writeArgs
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return a, nil, err
	}
	if err = checkFieldsBy(r, func(key string) bool { return key == field || isWriteArg(key) || slices.Contains(known, key) }); err != nil {
		return a, nil, err
	}
	if a.keepEmptyTs, err = optBool(r, "bypassEmptyTsReplacement"); err != nil {
		return a, nil, err
	}
	if a.ordered, err = orderedArg(r); err != nil {
		return a, nil, err
	}
	journal, err := r.args().SyncRequested()
	if err != nil {
		return a, nil, err
	}
	if journal {
		a.opt.Durable = &docstore.Durability{}
	}
	a.opt.Txn = r.storeTxn()
	stmts, err := appendStatements(dst, r, field)
	return a, stmts, err
}

func cmdInsert(h *Handler, r *request) (bson.D, error) {
	w := r.handled.takeInsert()
	a, docs, err := parseWriteArgsInto(w.stmtArr[:0], r, "documents")
	if err != nil {
		return nil, err
	}
	if err := nsname.ValidateNamespace(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := nsname.ValidateUserWrite(r.db, a.coll); err != nil {
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
	w.docs = docs
	w.start(h, r, a, rt, bypass, w)
	c, _, err := h.getOrCreate(r, r.db, a.coll)
	if err != nil && failsBatch(err) {
		return nil, clientError(err)
	}
	if err != nil {
		// mongod reports a collection it cannot create (a database name
		// differing in case, 13297; a full disk) as each document's error.
		reply, err := h.finishWrite(a, failEach(len(docs), a.ordered, err))
		return withRetried(rt, reply), err
	}
	w.c = c
	w.run.EachInterrupt = true
	if err := w.run.Run(len(docs)); err != nil {
		return nil, err
	}
	return w.finish()
}

// insertCmd is an insert command's documents, inserted into c
// (writeops.Statements).
type insertCmd struct {
	writeCmd
	c    *docstore.Collection
	docs []bson.D
	// group1 is the room of the first group Gather makes: a group is
	// answered before the next is gathered, and it serves one.
	group1     writeops.InsertRun
	group1Used bool
}

// Interrupted fails the command with the interrupt met before document
// i, as mongod's insert does; the documents before it stay inserted.
func (w *insertCmd) Interrupted(_ int, err error) error { return clientError(err) }

// Prior counts document i, inserted by the first attempt.
func (w *insertCmd) Prior(int, bson.D) { w.res.n++ }

// Gather groups the documents from i on for one batch.
func (w *insertCmd) Gather(i int) (*writeops.Group, error) {
	var into *writeops.InsertRun
	if !w.group1Used { // the first group, an insertOne's only one
		into, w.group1Used = &w.group1, true
	}
	return w.run.InsertGroup(into, w.c, w.a.opt, w.a.ordered, i, len(w.docs), w.doc, w)
}

// Alone is never called: InsertGroup's group is never empty, and an
// insert that cannot join one fails in it. Were it called, the command
// fails rather than the server.
func (w *insertCmd) Alone(int) (bool, error) {
	return true, mongoerr.New(mongoerr.InternalError, "insert: a document outside its batch")
}

// doc is document j, ready to insert.
func (w *insertCmd) doc(j int) (bson.D, error) {
	d := w.docs[j]
	if !w.a.keepEmptyTs {
		d = w.h.emptyTs.Fill(d, w.h.deps.Clock.Now())
	}
	return writeops.PrepareInsert(d)
}

// Committed counts a committed document (writeops.Committed: w itself
// answers its groups, where the method value w.inserted was an
// allocation per group).
func (w *insertCmd) Committed(int) { w.res.n++ }
