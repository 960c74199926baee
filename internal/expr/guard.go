package expr

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Guard bounds the evaluations of one operation: when its context ends
// (maxTimeMS, killOp, the client leaving, shutdown) every loop that looks
// at it stops at its next step instead of running to the end. It is safe
// for concurrent use.
type Guard struct {
	ctx context.Context
	// stop turns the context's end into the operation's error.
	stop func(context.Context) error
	// ended is set once ctx ends, so a loop's look costs one atomic load
	// rather than the context's lock.
	ended atomic.Bool
	steps atomic.Uint64
}

// NewGuard returns a Guard that stops evaluations once ctx is done, with
// MaxTimeMSExpired for a deadline and Interrupted otherwise.
func NewGuard(ctx context.Context) *Guard { return NewGuardFor(ctx, interruptedBy) }

// NewGuardFor is NewGuard whose error for the context's end is stop's
// (the command layer tells a shutdown from a killOp by the cause).
func NewGuardFor(ctx context.Context, stop func(context.Context) error) *Guard {
	g := &Guard{ctx: ctx, stop: stop}
	g.ended.Store(true) // Step arms it after directSteps
	return g
}

// Step counts one step of a loop and reports the operation's end as
// MongoDB's error for it. A nil Guard never stops.
func (g *Guard) Step() error {
	if g == nil {
		return nil
	}
	if g.steps.Add(1) < directSteps {
		if g.ctx.Err() != nil {
			return g.stop(g.ctx)
		}
		return nil
	}
	if !g.ended.Load() {
		return nil
	}
	return g.confirm()
}

// directSteps are the first steps, which ask the context itself; the
// flag is armed at the last of them. Arming registers a func with the
// context (and makes a maxTimeMS context start its timer), which costs a
// short operation, a find by token say, more than the few looks it needs.
const directSteps = 16

// confirm asks the context itself once the flag says it ended. A cursor's
// context is swapped for each getMore's (see commands' swapCtx), so a flag
// set when the command that opened the cursor returned may be stale: then
// the guard arms again, on the context now in place.
func (g *Guard) confirm() error {
	if g.ctx.Err() != nil {
		return g.stop(g.ctx)
	}
	if g.ended.CompareAndSwap(true, false) {
		context.AfterFunc(g.ctx, func() { g.ended.Store(true) })
	}
	if g.ctx.Err() != nil { // ended while arming: AfterFunc's goroutine may lag
		return g.stop(g.ctx)
	}
	return nil
}

// Steps is how many loop steps looked at g: a loop that never looks
// leaves it unchanged, which is how tests find one.
func (g *Guard) Steps() uint64 { return g.steps.Load() }

// GuardOf returns the Guard vars carry (see WithGuard), or nil.
func GuardOf(vars map[string]any) *Guard {
	g, _ := vars[guardKey].(*Guard)
	return g
}

// guardKey holds the Guard among an evaluation's variables; no user
// variable can be named so.
const guardKey = "\x00guard"

// WithGuard makes every Eval given vars (or a copy of them) honour g.
func WithGuard(vars map[string]any, g *Guard) map[string]any {
	if vars == nil {
		vars = map[string]any{}
	}
	vars[guardKey] = g
	return vars
}

// meter is what an evaluation's loops count their steps on; with no
// Guard it never stops them.
type meter struct{ guard *Guard }

func (m meter) step() error { return m.guard.Step() }

// order is cmp counting each comparison on m. A sort cannot be stopped
// midway, so once the operation has ended every comparison answers 0 at
// once and the sort runs out quickly; err then holds the reason.
func (m meter) order(cmp func(a, b any) int) (compare func(a, b any) int, err func() error) {
	var stopped error
	return func(a, b any) int {
		if stopped != nil {
			return 0
		}
		if stopped = m.step(); stopped != nil {
			return 0
		}
		return cmp(a, b)
	}, func() error { return stopped }
}

func (c *ctx) meter() meter { return meter{c.guard} }

func (c *ctx) step() error { return c.guard.Step() }

func interruptedBy(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
}

// Values an expression builds are bounded as mongod bounds them: a string
// must stay under 16 MiB (mongod's 16493), and no array may exceed the
// largest document (BSONObjectTooLarge): past that a $reduce or
// $concatArrays loop would only grow memory until the result failed
// anyway.
const (
	maxValueBytes = 16 << 20
	maxArrayBytes = 16<<20 + 16<<10
)

func checkStringSize(n int) error {
	if n+1 >= maxValueBytes {
		return mongoerr.New(mongoerr.Location16493, "Tried to create string longer than 16MB")
	}
	return nil
}

// checkArraySize estimates a built array's BSON size from its elements,
// stopping as soon as the estimate passes the limit.
func checkArraySize(a bson.A) error {
	if len(a) < 1024 {
		return nil
	}
	n := 5
	for _, v := range a {
		n += 8 + valueBytes(v)
		if n > maxArrayBytes {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, fmt.Sprintf("BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", n, n))
		}
	}
	return nil
}

// valueBytes is a lower bound on v's BSON size, enough to bound growth.
func valueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return 5 + len(x)
	case bson.A:
		return 5 + 9*len(x)
	case bson.D:
		return 5 + 9*len(x)
	case bson.Binary:
		return 5 + len(x.Data)
	}
	return 8
}
