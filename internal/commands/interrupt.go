package commands

import (
	"context"
	"errors"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/writeops"
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

// guardFilter is f guarded by a new Guard on ctx (query.Filter.Guarded).
// Only a filter with $expr reads its Guard, so only one with $expr gets
// one: making it cost every other filtered command an allocation.
func guardFilter(ctx context.Context, f *query.Filter) *query.Filter {
	if !f.UsesExpr() {
		return f
	}
	return f.Guarded(newGuard(ctx))
}

// guardModifier is m guarded by a new Guard on ctx (writeops.Guarded),
// which only a pipeline-style update reads; others are returned as they
// are, without a Guard made for nothing.
func guardModifier(ctx context.Context, m writeops.Modifier) writeops.Modifier {
	if _, ok := m.(writeops.PipelineModifier); !ok {
		return m
	}
	return writeops.Guarded(m, newGuard(ctx))
}

// causedBy is mongoerr.CausedBy for an err that is nil when the command
// succeeded: then it is nil, without the call, whose errors.As target
// costs an allocation even for a nil error.
func causedBy(context string, err error) error {
	if err == nil {
		return nil
	}
	return mongoerr.CausedBy(context, err)
}
