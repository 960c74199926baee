package commands

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/session"
)

// cmdKillOp stops the operation with currentOp's opid: its context ends,
// so it answers Interrupted (11601) at its next check. As on mongod the
// reply is the same whether or not the operation was still running.
func cmdKillOp(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	if err := checkFields(r, "op"); err != nil {
		return nil, err
	}
	v, ok := bsonutil.Field(r.body, "op")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, `Did not provide "op" field`)
	}
	if !bsonutil.IsNumber(v) {
		return nil, mongoerr.New(mongoerr.TypeMismatch, `"op" field must be a number`)
	}
	opid := int64(bsonutil.ToFloat(v))
	if h.deps.Activity.Kill(opid) {
		h.deps.Logger.Info("killing operation", "opid", opid, "by", r.conn.RemoteAddr())
	}
	return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
}

// interruptCause is mongod's error for an operation stopped other than by
// maxTimeMS: at shutdown, by its client leaving, by its transaction's
// expiry, or by killOp.
func interruptCause(ctx context.Context) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, server.ErrShuttingDown):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")
	case errors.Is(cause, session.ErrLifetimeExceeded):
		return mongoerr.New(mongoerr.TransactionExceededLifetimeLimitSeconds, "operation was interrupted")
	case errors.Is(cause, server.ErrClientDisconnected):
		return mongoerr.New(mongoerr.ClientDisconnect, "operation was interrupted because a client disconnected")
	}
	return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
}
