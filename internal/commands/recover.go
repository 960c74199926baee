package commands

import (
	"runtime/debug"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// runRecovering runs the command and turns a panic into an InternalError,
// so the caller still ends the operation's currentOp record and profiles
// it; a panic that escaped to the connection loop would leave the record
// "active" forever.
func (h *Handler) runRecovering(entry command, r *request) (reply bson.D, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.deps.Logger.Error("command panicked", "command", r.name, "db", r.db,
				"panic", p, "stack", string(debug.Stack()))
			reply, err = nil, mongoerr.Newf(mongoerr.InternalError, "internal error while running %s", r.name)
		}
	}()
	return h.run(entry, r)
}
