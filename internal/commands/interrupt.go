package commands

import (
	"context"
	"errors"

	"github.com/mayflydb/mayfly/internal/expr"
)

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
