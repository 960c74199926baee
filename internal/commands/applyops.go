package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/oplog"
)

// cmdApplyOps applies oplog entries (oplog.Applier), as mongorestore
// --oplogReplay sends them, and answers how many it applied.
func cmdApplyOps(h *Handler, r *request) (bson.D, error) {
	list, ok := r.body[0].Value.(bson.A)
	if !ok {
		return nil, wrongType(r.name, "applyOps", r.body[0].Value, "array")
	}
	if err := checkFields(r, "alwaysUpsert", "bypassDocumentValidation", "oplogApplicationMode", "writeConcern"); err != nil {
		return nil, err
	}
	upsert := true
	if v, ok := bsonutil.Field(r.body, "alwaysUpsert"); ok {
		upsert = expr.Truthy(v)
	}
	bypass, err := optBool(r, "bypassDocumentValidation")
	if err != nil {
		return nil, err
	}
	sync, err := r.args().SyncRequested()
	if err != nil {
		return nil, err
	}
	a := &oplog.Applier{Store: h.deps.Store, Now: h.deps.Clock.Now, Upsert: upsert,
		Opt:        docstore.WriteOptions{Sync: sync, BypassValidation: bypass},
		RefuseView: h.refuseView,
		Command: func(db, name string, body bson.D) error {
			inner := *r
			inner.name, inner.db, inner.body = name, db, body
			_, err := h.table[name].run(h, &inner)
			return err
		}}
	applied, err := a.ApplyAll(list)
	if err != nil {
		return nil, applyOpsFailed(err, applied+1)
	}
	results := make(bson.A, applied)
	for i := range results {
		results[i] = true
	}
	return bson.D{{Key: "applied", Value: int32(applied)}, {Key: "results", Value: results}}, nil
}

// applyOpsFailed is mongod's reply for an entry that failed: its error,
// with how many entries were tried and a false for each.
func applyOpsFailed(err error, tried int) error {
	e := *mongoerr.As(err)
	results := make(bson.A, tried)
	for i := range results {
		results[i] = false
	}
	e.Extra = append(append([]mongoerr.KV(nil), e.Extra...),
		mongoerr.KV{Key: "applied", Value: int32(tried)}, mongoerr.KV{Key: "results", Value: results})
	return &e
}
