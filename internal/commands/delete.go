package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/writeops"
)

func cmdDelete(h *Handler, r *request) (bson.D, error) {
	d := r.handled.takeDelete()
	a, stmts, err := parseWriteArgsInto(d.stmtArr[:0], r, "deletes")
	if err != nil {
		return nil, err
	}
	if err := cmdargs.CheckDeleteStatements(stmts); err != nil {
		return nil, err
	}
	if err := nsname.ValidateUserWrite(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, a.coll); err != nil {
		return nil, err
	}
	d.stmts = stmts
	if err := h.readLet(r, &d.let); err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	d.start(h, r, a, rt, false, d)
	if err := d.run.Run(len(stmts)); err != nil {
		return nil, err
	}
	return d.finish()
}

// deleteCmd is a delete command's statements, run (writeops.Statements).
type deleteCmd struct {
	writeCmd
	let   letScope
	stmts []bson.D
}

// Prior counts statement i's recorded result.
func (d *deleteCmd) Prior(_ int, rec bson.D) { d.res.n += int64(asInt32(rec, "n")) }

// Gather groups the statements from i on that delete one document by
// _id each; the answer closure is made only for statements of that shape.
func (d *deleteCmd) Gather(i int) (*writeops.Group, error) {
	if !byIDShape(d.stmts[i:]) {
		return nil, nil
	}
	return d.h.deleteGroup(&d.run, d.r, d.a, &d.let, d.stmts[i:], i, func(_ int, removed bool) { d.res.n += b2i(removed) }), nil
}

// Alone runs statement i by itself.
func (d *deleteCmd) Alone(i int) (bool, error) {
	n, err := d.h.deleteStatement(d.r, d.a, &d.let, d.stmts[i], d.rt, i)
	if err == nil {
		d.res.n += n // a statement that fails counts nothing, as on mongod
	}
	return d.Failed(i, err)
}

func (h *Handler) deleteStatement(r *request, a writeArgs, lv *letScope, s bson.D, rt *session.Txn, i int) (int64, error) {
	if err := checkInterrupt(r.ctx); err != nil {
		return 0, err
	}
	f, limit, hint, err := parseDeleteStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return 0, err
	}
	f = guardFilter(r.ctx, f)
	c := h.collection(r, r.db, a.coll)
	if c == nil {
		return 0, nil
	}
	if limit != 1 && rt != nil {
		return 0, refuseMulti(rt)
	}
	return h.writeOp(r).Delete(c, f, limit, hint, writeops.Recorded(rt, a.opt, i, writeops.RecordN(1)))
}

func parseDeleteStmt(s bson.D, let *letScope, dflt *collation.Collation) (*query.Filter, int, any, error) {
	for _, e := range s {
		if !cmdargs.IsDeleteStatementField(e.Key) {
			return nil, 0, nil, mongoerr.Newf(mongoerr.Location40415, "BSON field 'delete.deletes.%s' is an unknown field.", e.Key)
		}
	}
	coll, err := statementCollation(s, dflt)
	if err != nil {
		return nil, 0, nil, err
	}
	q, _ := bsonutil.Field(s, "q")
	qd, ok := q.(bson.D)
	if !ok {
		return nil, 0, nil, mongoerr.New(mongoerr.Location40414, "BSON field 'delete.deletes.q' is missing but a required field")
	}
	lv, ok := bsonutil.Field(s, "limit")
	if !ok {
		return nil, 0, nil, mongoerr.New(mongoerr.Location40414, "BSON field 'delete.deletes.limit' is missing but a required field")
	}
	limit, err := cmdargs.DeleteLimit(lv)
	if err != nil {
		return nil, 0, nil, err
	}
	f, err := let.filter(qd, coll)
	hint, _ := bsonutil.Field(s, "hint")
	return f, limit, hint, err
}
