package failpoint

import (
	"context"
	"log/slog"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Before is how a front end (a mongod's command layer, a router) lets
// failCommand act on a command about to run.
type Before struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// HangUp drops the client's connection after the reply (nil: no
	// connection, a command run in process).
	HangUp func()
	// Interrupted is the error of a hold its context cut short.
	Interrupted func(ctx context.Context) error
}

// FailBefore consults failCommand once, before the command runs: it may
// hold the command (blockConnection), drop the connection without a
// reply (closeConnection) or fail the command (errorCode).
func (r *Registry) FailBefore(ctx context.Context, call Call, b Before) error {
	if !r.On(FailCommand) {
		return nil // before the failure is built: every command asks
	}
	f, ok := r.CommandFailure(call, CommandFailure.FailsCommand)
	if !ok {
		return nil
	}
	if f.BlockConnection {
		if err := f.block(ctx, b); err != nil {
			return err
		}
	}
	if f.CloseConnection {
		if b.HangUp != nil {
			b.HangUp()
		}
		return mongoerr.New(mongoerr.Location50985, "Failing command due to 'failCommand' failpoint")
	}
	if f.HasErrorCode {
		return f.Error()
	}
	return nil
}

func (f CommandFailure) block(ctx context.Context, b Before) error {
	d, err := f.BlockTime()
	if err != nil || d == 0 {
		return err
	}
	b.Logger.Info("Blocking connection via 'failCommand' failpoint", "blockTime", d.String())
	t := b.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return b.Interrupted(ctx)
	}
}

// FailWriteConcern gives a write's successful reply failCommand's
// writeConcernError (and its errorLabels).
func (r *Registry) FailWriteConcern(call Call, reply bson.D) bson.D {
	if !r.On(FailCommand) {
		return reply
	}
	f, ok := r.CommandFailure(call, func(f CommandFailure) bool { return f.HasWriteConcern })
	if !ok {
		return reply
	}
	reply = append(reply, bson.E{Key: "writeConcernError", Value: f.WriteConcernError})
	if len(f.ErrorLabels) > 0 {
		reply = append(reply, bson.E{Key: "errorLabels", Value: f.ErrorLabels})
	}
	return reply
}
