package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// MongoDB 8.0's bulkWrite runs inserts, updates and deletes over several
// namespaces in one command, against the admin database. Each operation
// names its namespace by index into nsInfo; the reply is a cursor of
// per-operation results (only the failed ones with errorsOnly) and the
// totals. Each operation goes the way the single-namespace command's
// statement goes, so the two cannot drift apart.

// stmtIds comes from a router: each op's statement id in the client's
// bulkWrite, which a shard's part renumbers.
var bulkWriteFields = []string{"ops", "nsInfo", "ordered", "bypassDocumentValidation", "let", "errorsOnly", "cursor", "stmtIds"}

// bulkTotals are the counters of the reply.
type bulkTotals struct {
	errors, inserted, matched, modified, upserted, deleted int64
}

type bulkWrite struct {
	h          *Handler
	r          *request
	ns         []string
	nsInfo     []bson.D
	ops        []bson.D
	ordered    bool
	errorsOnly bool
	let        *letScope
	// runner runs the ops; it holds the retryable write's session (rt)
	// and the write options.
	runner  *writeops.Runner
	results bson.A
	totals  bulkTotals
	// aborted is the error that fails the whole command (failsBatch): an
	// op interrupted, as mongod's bulkWrite rethrows it.
	aborted error
	// routed is the context of each namespace a router sent with a
	// shard version (bulkwrite_routed.go).
	routed map[string]context.Context
}

func cmdBulkWrite(h *Handler, r *request) (bson.D, error) {
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "The bulkWrite command can only be run against the admin database")
	}
	if err := checkFields(r, bulkWriteFields...); err != nil {
		return nil, err
	}
	b, err := parseBulkWrite(h, r)
	if err != nil {
		return nil, err
	}
	release, err := b.enterRouted()
	defer release()
	if err != nil {
		return nil, err
	}
	if err := b.runner.Run(len(b.ops)); err != nil {
		return nil, err
	}
	b.countOps(b.ops)
	if b.runner.Opt.Durable != nil {
		if err := h.deps.Store.WaitDurable(b.runner.Opt.Durable); err != nil {
			return nil, err
		}
	}
	return b.reply(), nil
}

func parseBulkWrite(h *Handler, r *request) (*bulkWrite, error) {
	b := &bulkWrite{h: h, r: r, ordered: true, results: bson.A{}}
	b.runner = &writeops.Runner{Op: h.writeOp(r), EachInterrupt: true, Stmts: b}
	var err error
	if b.ordered, err = orderedArg(r); err != nil {
		return nil, err
	}
	if b.errorsOnly, err = optBool(r, "errorsOnly"); err != nil {
		return nil, err
	}
	if b.runner.Opt.BypassValidation, err = bypassArg(r); err != nil {
		return nil, err
	}
	if b.let, err = h.parseLet(r); err != nil {
		return nil, err
	}
	journal, err := r.args().SyncRequested()
	if err != nil {
		return nil, err
	}
	if journal {
		b.runner.Opt.Durable = &docstore.Durability{}
	}
	b.runner.Opt.Txn = r.storeTxn()
	if b.runner.Txn, err = h.retryableWrite(r); err != nil {
		return nil, err
	}
	if b.nsInfo, err = statements(r, "nsInfo"); err != nil {
		return nil, err
	}
	for _, d := range b.nsInfo {
		ns, _ := bsonutil.Field(d, "ns")
		s, ok := ns.(string)
		if !ok {
			return nil, wrongType("bulkWrite.nsInfo", "ns", ns, "string")
		}
		b.ns = append(b.ns, s)
	}
	b.ops, err = statements(r, "ops")
	return b, err
}

// b is its runner's writeops.Statements.

// Interrupted ends the command with the interrupt's error.
func (b *bulkWrite) Interrupted(_ int, err error) error { return err }

// Prior answers op i from its first attempt's record.
func (b *bulkWrite) Prior(i int, rec bson.D) { b.retried(i, bulkOpKind(b.ops[i]), rec) }

// Gather groups the ops from i on (group).
func (b *bulkWrite) Gather(i int) (*writeops.Group, error) { return b.group(i) }

// Alone runs op i by itself: an ordered bulkWrite stops at its failure.
func (b *bulkWrite) Alone(i int) (bool, error) {
	failed := !b.run(i, b.ops[i])
	return failed && (b.ordered || b.aborted != nil), b.aborted
}

// Failed records op i's failure: an ordered bulkWrite stops there.
func (b *bulkWrite) Failed(i int, err error) (bool, error) {
	b.fail(i, bulkOpKind(b.ops[i]), err)
	return b.ordered || b.aborted != nil, b.aborted
}

// bulkOpKind is an op's kind: insert, update or delete ("" when empty).
func bulkOpKind(op bson.D) string {
	if len(op) == 0 {
		return ""
	}
	return op[0].Key
}

// run executes op number i alone and records its result; false when it
// failed.
func (b *bulkWrite) run(i int, op bson.D) bool {
	if len(op) == 0 {
		return b.fail(i, "", mongoerr.New(mongoerr.FailedToParse, "Unrecognized bulkWrite operation"))
	}
	kind := op[0].Key
	db, coll, err := b.namespace(op[0].Value)
	if err != nil {
		return b.fail(i, kind, err)
	}
	if err := b.h.refuseView(db, coll); err != nil {
		return b.fail(i, kind, err)
	}
	rr := *b.r
	rr.db, rr.ctx = db, b.contextFor(db, coll)
	opt := b.runner.Opt
	switch kind {
	case "insert":
		return b.insert(i, &rr, coll, op, opt)
	case "update":
		return b.update(i, &rr, coll, op, opt)
	case "delete":
		return b.remove(i, &rr, coll, op, opt)
	}
	return b.fail(i, kind, mongoerr.Newf(mongoerr.FailedToParse, "Unrecognized bulkWrite operation: %s", kind))
}

func (b *bulkWrite) namespace(v any) (db, coll string, err error) {
	if !bsonutil.IsNumber(v) {
		return "", "", mongoerr.New(mongoerr.TypeMismatch, "bulkWrite operation's namespace index must be a number")
	}
	i := int(bsonutil.ToFloat(v))
	if i < 0 || i >= len(b.ns) {
		return "", "", mongoerr.Newf(mongoerr.BadValue, "BulkWrite ops entry %d has an invalid nsInfo index.", i)
	}
	db, coll, ok := strings.Cut(b.ns[i], ".")
	if !ok {
		return "", "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", b.ns[i])
	}
	if err := nsname.ValidateNamespace(db, coll); err != nil {
		return "", "", err
	}
	return db, coll, nsname.ValidateUserWrite(db, coll)
}

func (b *bulkWrite) insert(i int, r *request, coll string, op bson.D, opt docstore.WriteOptions) bool {
	doc, err := insertedDoc(op)
	var c *docstore.Collection
	if err == nil {
		c, _, err = b.h.getOrCreate(r, r.db, coll)
	}
	if err == nil {
		err = c.Insert(doc, writeops.Recorded(b.runner.Txn, opt, i, writeops.RecordN(1)))
	}
	if err != nil {
		return b.fail(i, "insert", err)
	}
	b.totals.inserted++
	return b.ok(i, bson.D{{Key: "n", Value: int32(1)}})
}

// updateStmtOf is an update op as an update command's statement.
func updateStmtOf(op bson.D) (bson.D, error) {
	stmt := renameFields(op[1:], map[string]string{"filter": "q", "updateMods": "u"})
	return stmt, cmdargs.CheckUpdateStatements([]bson.D{stmt})
}

// deleteStmtOf is a delete op as a delete command's statement.
func deleteStmtOf(op bson.D) (bson.D, error) {
	stmt := renameFields(op[1:], map[string]string{"filter": "q"})
	multi, _ := bsonutil.Field(stmt, "multi")
	stmt = bsonutil.WithoutField(stmt, "multi")
	limit := int32(1)
	if multi == true {
		limit = 0
	}
	stmt = append(stmt, bson.E{Key: "limit", Value: limit})
	return stmt, cmdargs.CheckDeleteStatements([]bson.D{stmt})
}

func (b *bulkWrite) update(i int, r *request, coll string, op bson.D, opt docstore.WriteOptions) bool {
	stmt, err := updateStmtOf(op)
	if err != nil {
		return b.fail(i, "update", err)
	}
	if sortWithMulti(stmt) {
		return b.fail(i, "update", mongoerr.New(mongoerr.FailedToParse, "Cannot specify sort with multi=true"))
	}
	var res writeResult
	a := writeArgs{coll: coll, opt: opt}
	if err := b.h.updateStatement(r, a, b.let, i, stmt, &res, b.runner.Txn); err != nil {
		return b.fail(i, "update", err)
	}
	var upserted any
	if len(res.upserted) > 0 {
		upserted, _ = bsonutil.Field(res.upserted[0].(bson.D), "_id")
	}
	return b.updated(i, res.n, res.nModified, upserted)
}

// updated records update op i's result: n documents matched (the
// upserted one included), modified of them changed, upserted the new
// document's _id when it inserted one (else nil).
func (b *bulkWrite) updated(i int, n, modified int64, upserted any) bool {
	out := bson.D{{Key: "n", Value: int32(n)}, {Key: "nModified", Value: int32(modified)}}
	if upserted != nil {
		out = append(out, bson.E{Key: "upserted", Value: bson.D{{Key: "_id", Value: upserted}}})
		b.totals.upserted++
		b.totals.matched += n - 1
	} else {
		b.totals.matched += n
	}
	b.totals.modified += modified
	return b.ok(i, out)
}

func (b *bulkWrite) remove(i int, r *request, coll string, op bson.D, opt docstore.WriteOptions) bool {
	stmt, err := deleteStmtOf(op)
	if err != nil {
		return b.fail(i, "delete", err)
	}
	n, err := b.h.deleteStatement(r, writeArgs{coll: coll, opt: opt}, b.let, stmt, b.runner.Txn, i)
	if err != nil {
		return b.fail(i, "delete", err)
	}
	return b.deleted(i, n)
}

// deleted records delete op i's result: n documents removed.
func (b *bulkWrite) deleted(i int, n int64) bool {
	b.totals.deleted += n
	return b.ok(i, bson.D{{Key: "n", Value: int32(n)}})
}

// retried answers op i of a retried bulkWrite from its record.
func (b *bulkWrite) retried(i int, kind string, prior bson.D) bool {
	n := asInt32(prior, "n")
	switch kind {
	case "insert":
		b.totals.inserted++
		return b.ok(i, bson.D{{Key: "n", Value: int32(1)}})
	case "delete":
		b.totals.deleted += int64(n)
		return b.ok(i, bson.D{{Key: "n", Value: n}})
	}
	out := bson.D{{Key: "n", Value: n}, {Key: "nModified", Value: asInt32(prior, "nModified")}}
	if id, ok := bsonutil.Field(prior, "upserted"); ok {
		out = append(out, bson.E{Key: "upserted", Value: bson.D{{Key: "_id", Value: id}}})
		b.totals.upserted++
	} else {
		b.totals.matched += int64(n)
		b.totals.modified += int64(asInt32(prior, "nModified"))
	}
	return b.ok(i, out)
}

func (b *bulkWrite) ok(i int, counts bson.D) bool {
	if !b.errorsOnly {
		b.results = append(b.results, append(bson.D{{Key: "ok", Value: 1.0}, {Key: "idx", Value: int32(i)}}, counts...))
	}
	return true
}

// fail records an operation's error as mongod's bulkWrite reply does:
// {ok: 0, idx, code, errmsg, <extra>, n: 0 (nModified: 0 for updates)}.
func (b *bulkWrite) fail(i int, kind string, err error) bool {
	cerr := clientError(err)
	if failsBatch(err) {
		b.aborted = cerr
	}
	b.results = append(b.results, mongoerr.BulkWriteItem(i, kind, cerr))
	b.totals.errors++
	return false
}

func (b *bulkWrite) reply() bson.D {
	t := b.totals
	return bson.D{
		{Key: "cursor", Value: bson.D{
			{Key: "id", Value: int64(0)},
			{Key: "firstBatch", Value: b.results},
			{Key: "ns", Value: "admin.$cmd.bulkWrite"},
		}},
		{Key: "nErrors", Value: int32(t.errors)},
		{Key: "nInserted", Value: int32(t.inserted)},
		{Key: "nMatched", Value: int32(t.matched)},
		{Key: "nModified", Value: int32(t.modified)},
		{Key: "nUpserted", Value: int32(t.upserted)},
		{Key: "nDeleted", Value: int32(t.deleted)},
	}
}

func fieldDoc(d bson.D, key string) (bson.D, bool) {
	v, _ := bsonutil.Field(d, key)
	doc, ok := v.(bson.D)
	return doc, ok
}

// renameFields returns d with the keys in names renamed.
func renameFields(d bson.D, names map[string]string) bson.D {
	out := make(bson.D, len(d))
	for i, e := range d {
		if n, ok := names[e.Key]; ok {
			e.Key = n
		}
		out[i] = e
	}
	return out
}
