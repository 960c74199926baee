package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
)

func cmdGetParameter(h *Handler, r *request) (bson.D, error) {
	return h.deps.Params.GetCommand(r.body[0].Value, cmdargs.Named(r.body))
}

func cmdSetParameter(h *Handler, r *request) (bson.D, error) {
	return h.deps.Params.SetCommand(cmdargs.Named(r.body))
}
