package commands

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/writeops"
)

var deleteStmtFields = []string{"q", "limit", "hint", "collation"}

func cmdDelete(h *Handler, r *request) (bson.D, error) {
	a, stmts, err := parseWriteArgs(r, "deletes")
	if err != nil {
		return nil, err
	}
	if err := deleteShape.check(stmts); err != nil {
		return nil, err
	}
	if err := docstore.ValidateUserWrite(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, a.coll); err != nil {
		return nil, err
	}
	lv, err := h.parseLet(r)
	if err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	var res writeResult
	run := h.commandRunner(r, &a, rt, false, &res)
	run.Prior = func(_ int, rec bson.D) { res.n += int64(asInt32(rec, "n")) }
	run.Gather = func(i int) (*writeops.Group, error) {
		return h.deleteGroup(run, r, a, lv, stmts[i:], i, func(_ int, removed bool) { res.n += b2i(removed) }), nil
	}
	run.Alone = func(i int) (bool, error) {
		n, err := h.deleteStatement(r, a, lv, stmts[i], rt, i)
		if err == nil {
			res.n += n // a statement that fails counts nothing, as on mongod
		}
		return run.Failed(i, err)
	}
	if err := run.Run(len(stmts)); err != nil {
		return nil, err
	}
	reply, err := h.finishWrite(a, &res)
	return withRetried(rt, reply), err
}

func (h *Handler) deleteStatement(r *request, a writeArgs, lv *letScope, s bson.D, rt *session.Txn, i int) (int64, error) {
	if err := checkInterrupt(r.ctx); err != nil {
		return 0, err
	}
	f, limit, hint, err := parseDeleteStmt(s, lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return 0, err
	}
	f = f.Guarded(newGuard(r.ctx))
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
		if !slices.Contains(deleteStmtFields, e.Key) {
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
	limit, err := deleteLimit(lv)
	if err != nil {
		return nil, 0, nil, err
	}
	f, err := let.filter(qd, coll)
	hint, _ := bsonutil.Field(s, "hint")
	return f, limit, hint, err
}
