package commands

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
)

// Retryable writes on a replica set member: a write command's lsid,
// txnNumber and stmtIds as mongod reads them. The records that make a
// retry answer the first attempt's result are internal/session's.

// retryableWrite returns the retry state of a write command, or nil when
// it is not a retryable write (standalone, or no txnNumber).
func (h *Handler) retryableWrite(r *request) (*session.Txn, error) {
	if h.deps.Repl == nil || r.txn != nil {
		return nil, nil // a transaction's statements commit with it
	}
	txn, lsid, label, ok, err := sessionTxnNumber(r)
	if !ok || err != nil {
		return nil, err
	}
	ids, err := stmtIDs(r)
	if err != nil {
		return nil, err
	}
	return session.Begin(session.Write{Engine: h.deps.Store.Engine(), LSID: lsid, Label: label, Txn: txn, StmtIDs: ids, Now: h.deps.Clock.Now,
		BeforeCommit: h.transactionalWriteCheck(r, label, txn), Migrated: h.deps.Migrations != nil})
}

// sessionTxnNumber reads txnNumber (ok: present) and the session it
// belongs to (sessionKey).
func sessionTxnNumber(r *request) (txn int64, lsid []byte, label string, ok bool, err error) {
	v, ok := bsonutil.Field(r.body, "txnNumber")
	if !ok {
		return 0, nil, "", false, nil
	}
	txn, isInt := v.(int64)
	if !isInt {
		return 0, nil, "", true, wrongType(r.name, "txnNumber", v, "long")
	}
	lsid, label, err = sessionKey(r)
	return txn, lsid, label, true, err
}

// sessionKey reads lsid.id (and lsid.uid when present), and how errors
// name the session.
func sessionKey(r *request) ([]byte, string, error) {
	v, ok := bsonutil.Field(r.body, "lsid")
	d, isDoc := v.(bson.D)
	if !ok || !isDoc {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "Must specify an lsid with txnNumber")
	}
	idValue, _ := bsonutil.Field(d, "id")
	bin, isBin := idValue.(bson.Binary)
	if !isBin {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid.id must be a UUID")
	}
	id := append([]byte(nil), bin.Data...)
	if uid, ok := bsonutil.Field(d, "uid"); ok {
		if b, isBin := uid.(bson.Binary); isBin {
			id = append(id, b.Data...)
		}
	}
	if len(id) > session.MaxLSID {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid is too long")
	}
	return id, fmt.Sprintf("%x", bin.Data), nil
}

func stmtIDs(r *request) ([]int32, error) {
	v, ok := bsonutil.Field(r.body, "stmtIds")
	if !ok {
		return nil, nil
	}
	arr, isArr := v.(bson.A)
	if !isArr {
		return nil, wrongType(r.name, "stmtIds", v, "array")
	}
	out := make([]int32, len(arr))
	for i, x := range arr {
		n, err := cmdargs.Int64(r.name, "stmtIds", x)
		if err != nil {
			return nil, err
		}
		out[i] = int32(n)
	}
	return out, nil
}

// withRetried adds retriedStmtIds to a write command's reply.
func withRetried(rt *session.Txn, reply bson.D) bson.D {
	if ids := rt.Retried(); len(ids) > 0 {
		return append(reply, bson.E{Key: "retriedStmtIds", Value: ids})
	}
	return reply
}

// refuseMulti refuses a multi-document statement in a retryable write, as
// mongod does.
func refuseMulti(rt *session.Txn) error {
	if rt == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Cannot use (or request) retryable writes with multi=true")
}

func asInt32(d bson.D, key string) int32 {
	v, _ := bsonutil.Field(d, key)
	n, _ := v.(int32)
	return n
}

// addPrior counts a retried update statement's recorded result.
func (w *writeResult) addPrior(i int, prior bson.D) {
	w.n += int64(asInt32(prior, "n"))
	w.nModified += int64(asInt32(prior, "nModified"))
	if id, ok := bsonutil.Field(prior, "upserted"); ok {
		w.upserted = append(w.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: id}})
	}
}
