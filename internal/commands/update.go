package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// parseModifier reads u: an operator document, a replacement, or a
// pipeline (array of stages).
func parseModifier(u any, arrayFilters []bson.D, lv *letScope, coll *collation.Collation) (writeops.Modifier, error) {
	return writeops.ParseModifier(u, arrayFilters, lv.doc, collator(coll))
}

// updateStmt is one parsed statement of an update command.
type updateStmt struct {
	filter *query.Filter
	mod    writeops.Modifier
	upsert bool
	multi  bool
	hint   any
	// sort picks the document a single-document update changes (8.0).
	sort     *query.Sort
	sortSpec bson.D
}

// write is the statement as the write layer runs it.
func (st *updateStmt) write() *writeops.Update {
	return &writeops.Update{Filter: st.filter, Mod: st.mod, Upsert: st.upsert, Multi: st.multi, Hint: st.hint, Sort: st.sort}
}

// parseUpdateStmt parses statement s. The statement is a value, which
// its callers keep on their stacks: they keep only its parts.
func parseUpdateStmt(s bson.D, lv *letScope, dflt *collation.Collation) (updateStmt, error) {
	var st updateStmt
	for _, e := range s {
		if !cmdargs.IsUpdateStatementField(e.Key) {
			return st, mongoerr.Newf(mongoerr.Location40415, "BSON field 'update.updates.%s' is an unknown field.", e.Key)
		}
	}
	coll, err := statementCollation(s, dflt)
	if err != nil {
		return st, err
	}
	q, _ := bsonutil.Field(s, "q")
	qd, ok := q.(bson.D)
	if !ok {
		return st, mongoerr.New(mongoerr.Location40414, "BSON field 'update.updates.q' is missing but a required field")
	}
	if st.filter, err = lv.filter(qd, coll); err != nil {
		return st, err
	}
	if err := st.parseFlags(s); err != nil {
		return st, err
	}
	if err := st.parseSort(s); err != nil {
		return st, err
	}
	st.sort = collatedSort(st.sort, coll)
	err = st.parseMod(s, lv, coll)
	return st, err
}

// parseSort reads the statement's sort, which only a single-document
// update may have.
func (st *updateStmt) parseSort(s bson.D) error {
	v, ok := bsonutil.Field(s, "sort")
	if !ok || v == nil {
		return nil
	}
	d, isDoc := v.(bson.D)
	if !isDoc {
		return wrongType("update.updates", "sort", v, "object")
	}
	if len(d) == 0 {
		return nil
	}
	var err error
	st.sort, err = query.NewSort(d)
	st.sortSpec = d
	return err
}

// parseFlags reads upsert, multi and hint. (Pointers to st's flags, as
// a loop over them would take, would move st to the heap.)
func (st *updateStmt) parseFlags(s bson.D) error {
	var err error
	if st.upsert, err = stmtFlag(s, "upsert"); err != nil {
		return err
	}
	if st.multi, err = stmtFlag(s, "multi"); err != nil {
		return err
	}
	st.hint, _ = bsonutil.Field(s, "hint")
	return nil
}

// stmtFlag reads the bool field name of update statement s (false when
// it is absent).
func stmtFlag(s bson.D, name string) (bool, error) {
	v, ok := bsonutil.Field(s, name)
	if !ok {
		return false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, wrongType("update.updates", name, v, "bool")
	}
	return b, nil
}

func (st *updateStmt) parseMod(s bson.D, lv *letScope, coll *collation.Collation) error {
	u, ok := bsonutil.Field(s, "u")
	if !ok {
		return mongoerr.New(mongoerr.Location40414, "BSON field 'update.updates.u' is missing but a required field")
	}
	var filters []bson.D
	if v, ok := bsonutil.Field(s, "arrayFilters"); ok {
		var err error
		if filters, err = cmdargs.DocArray("update.updates", "arrayFilters", v); err != nil {
			return err
		}
	}
	var err error
	if st.mod, err = parseModifier(u, filters, lv, coll); err != nil {
		return err
	}
	if st.multi && st.mod.Replacement() {
		return mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	return nil
}

func cmdUpdate(h *Handler, r *request) (bson.D, error) {
	u := r.handled.takeUpdate()
	a, stmts, err := parseWriteArgsInto(u.stmtArr[:0], r, "updates")
	if err != nil {
		return nil, err
	}
	if err := cmdargs.CheckUpdateStatements(stmts); err != nil {
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
	u.stmts = stmts
	if err := h.readLet(r, &u.let); err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	u.res.withModified = true
	u.start(h, r, a, rt, bypass, u)
	if err := u.run.Run(len(stmts)); err != nil {
		return nil, err
	}
	if err := liteParseUpdatePipelines(stmts); err != nil {
		return nil, err
	}
	return u.finish()
}

// updateCmd is an update command's statements, run (writeops.Statements).
type updateCmd struct {
	writeCmd
	let   letScope
	stmts []bson.D
}

// Prior counts statement i's recorded result.
func (u *updateCmd) Prior(i int, rec bson.D) { u.res.addPrior(i, rec) }

// Gather groups the statements from i on that update one document by
// _id each; the answer closure is made only for statements of that shape.
func (u *updateCmd) Gather(i int) (*writeops.Group, error) {
	if sortWithMulti(u.stmts[i]) {
		// mongod checks this outside the statement's error
		// handling: the whole command fails.
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify sort with multi=true")
	}
	if !byIDShape(u.stmts[i:]) {
		return nil, nil
	}
	return u.h.updateGroup(&u.run, u.r, u.a, &u.let, u.stmts[i:], i, func(k int, e *writeops.UpdateEffect) { countEffect(e, i+k, &u.res) }), nil
}

// Alone runs statement i by itself.
func (u *updateCmd) Alone(i int) (bool, error) {
	return u.Failed(i, u.h.updateStatement(u.r, u.a, &u.let, i, u.stmts[i], &u.res, u.rt))
}

// liteParseUpdatePipelines fails the command, once its statements have
// run, on a pipeline update with an unknown stage: mongod 8.0 lite-parses
// each one then to count its stages (incrementUpdateMetrics), so the
// statement's own write error gives way to the parse's command error.
func liteParseUpdatePipelines(stmts []bson.D) error {
	for _, s := range stmts {
		if u, ok := bsonutil.Field(s, "u"); ok {
			if stages, ok := u.(bson.A); ok {
				if err := aggregate.LiteParse(stages); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (h *Handler) updateStatement(r *request, a writeArgs, lv *letScope, i int, s bson.D, res *writeResult, rt *session.Txn) error {
	if err := checkInterrupt(r.ctx); err != nil {
		return err
	}
	st, err := h.parsedUpdate(r, a, lv, s)
	if err != nil {
		return err
	}
	if st.multi && rt != nil {
		return refuseMulti(rt)
	}
	opt := writeops.Recorded(rt, a.opt, i, func() bson.D { return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}} })
	got, err := h.writeOp(r).Update(h.deps.Store, r.db, a.coll, st.write(), opt, func(id any) docstore.WriteOptions {
		return writeops.Recorded(rt, a.opt, i, func() bson.D { return bson.D{{Key: "n", Value: int32(1)}, {Key: "upserted", Value: id}} })
	})
	if err != nil {
		return err
	}
	res.n += got.Matched
	res.nModified += got.Modified
	if got.Upserted != nil {
		res.upserted = append(res.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: got.Upserted}})
	}
	return nil
}

// writeOp is r's operation as the write layer takes it, made once per
// request: a command's statements share it.
func (h *Handler) writeOp(r *request) writeops.Op {
	if r.op.CheckCtx == nil || r.op.Ctx != r.ctx {
		r.op = writeops.Op{Ctx: r.ctx, CheckCtx: checkInterrupt, Now: h.now, Txn: r.storeTxn()}
	}
	return r.op
}

// parsedUpdate is statement s, ready to run in r.
func (h *Handler) parsedUpdate(r *request, a writeArgs, lv *letScope, s bson.D) (updateStmt, error) {
	st, err := parseUpdateStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return st, err
	}
	if a.keepEmptyTs {
		st.mod = writeops.KeepEmptyTimestamps(st.mod)
	}
	st.filter, st.mod = guardFilter(r.ctx, st.filter), guardModifier(r.ctx, st.mod)
	return st, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func sortWithMulti(s bson.D) bool {
	multi, _ := bsonutil.Field(s, "multi")
	sort, hasSort := bsonutil.Field(s, "sort")
	return multi == true && hasSort && sort != nil
}
