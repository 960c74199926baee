package commands

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/expr"
)

// interruptible stops a source once the command's context ends (maxTimeMS
// or shutdown), so blocking stages that drain their input stop too.
type interruptible struct {
	ctx context.Context
	src cursor.Source
}

func (s *interruptible) Next() (bson.D, bool, error) {
	if err := checkInterrupt(s.ctx); err != nil {
		return nil, false, err
	}
	return s.src.Next()
}

func (s *interruptible) Close() error { return s.src.Close() }

// interruptionOr is err, or when err is ctx's end (a lower layer that
// stopped on it) the operation's error for that end.
func interruptionOr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return checkInterrupt(ctx)
	}
	return err
}

// newGuard is the Guard of an operation running under ctx: its loops end
// with the error checkInterrupt gives (MaxTimeMSExpired, Interrupted,
// InterruptedAtShutdown, ClientDisconnect).
func newGuard(ctx context.Context) *expr.Guard { return expr.NewGuardFor(ctx, checkInterrupt) }
