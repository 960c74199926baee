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
// (maxTimeMS, killOp, the client leaving, shutdown) the loops of long
// expressions stop within checkEvery steps instead of running to the end.
// It is safe for concurrent use.
type Guard struct {
	ctx   context.Context
	steps atomic.Uint32
}

// NewGuard returns a Guard that stops evaluations once ctx is done.
func NewGuard(ctx context.Context) *Guard { return &Guard{ctx: ctx} }

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

// checkEvery is how many loop steps pass between looks at the context.
const checkEvery = 1024

// step counts one loop step and, every checkEvery, reports the context's
// end as MongoDB's error for it.
func (c *ctx) step() error {
	if c.guard == nil || c.guard.steps.Add(1)%checkEvery != 0 {
		return nil
	}
	return interrupted(c.guard.ctx.Err())
}

func interrupted(err error) error {
	switch {
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
