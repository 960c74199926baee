package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/docmove"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardcmds"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// cmdShardsvrMoveDocument carries out, on the shard holding a document,
// an update that changed its shard key to a value another shard owns
// (the router sends it after the shard answered WouldChangeOwningShard;
// internal/docmove). It is a statement of the client's
// retryable write: sent again after the move finished it answers ok
// without moving again, and the update's own retry finds the
// statement's record.
func cmdShardsvrMoveDocument(h *Handler, r *request) (bson.D, error) {
	m := h.shard.Mover
	if m == nil {
		return nil, shardcmds.NotAShard(r.name)
	}
	c := r.args()
	req, err := moveDocumentRequest(c)
	if err != nil {
		return nil, err
	}
	n, ok, err := txnrules.TxnNumber(c)
	if err != nil {
		return nil, err
	}
	if ok {
		ids, err := txnrules.StmtIDs(c)
		if err != nil {
			return nil, err
		}
		stmt := int32(0)
		if len(ids) > 0 {
			stmt = ids[0]
		}
		req.Session = &migrate.MoveSession{LSID: n.LSID, Label: n.Label, Txn: n.Txn, StmtID: stmt}
	}
	return bson.D{}, m.MoveDocument(r.ctx, req)
}

// moveDocumentRequest reads the command: the namespace, toShard, both
// images and the statement ("update" or "findAndModify") whose retry
// record the move writes.
func moveDocumentRequest(c cmdargs.Call) (docmove.Request, error) {
	var req docmove.Request
	var err error
	if req.Namespace, err = c.String(c.Name); err != nil {
		return req, err
	}
	if req.ToShard, err = c.String("toShard"); err != nil {
		return req, err
	}
	if req.Pre, err = requiredDoc(c, "preImage"); err != nil {
		return req, err
	}
	if req.Post, err = requiredDoc(c, "postImage"); err != nil {
		return req, err
	}
	statement, err := c.String("statement")
	if err != nil {
		return req, err
	}
	switch statement {
	case "update":
		req.Result = bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}}
	case "findAndModify":
		req.Result = bson.D{{Key: "before", Value: req.Pre}, {Key: "after", Value: req.Post}}
	default:
		return req, mongoerr.Newf(mongoerr.BadValue, "statement must be update or findAndModify, not %q", statement)
	}
	return req, nil
}

// requiredDoc reads a document field that must be there.
func requiredDoc(c cmdargs.Call, field string) (bson.D, error) {
	d, err := c.OptDoc(field)
	if err == nil && d == nil {
		err = mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", c.Name, field)
	}
	return d, err
}
