package commands

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxTimeCtx is a command's context with maxTimeMS's deadline. Drivers
// send maxTimeMS with most commands (from an operation's timeout), and
// context.WithTimeout cost every one of them a timer, a child registered
// with the command's context and their removal: 3 % of a session
// operation's CPU. Almost every command ends before its deadline without
// waiting on Done, so this context starts that timer only when something
// waits (Done, or a context.AfterFunc or a child context on it); Err
// reads the clock instead. maxTimeMS is real time, as the timer's is.
//
// It keeps the context contract: once Err is not nil Done is closed (Err
// makes the timer's context, already expired, when it sees the deadline
// pass), and Done closes only when the parent ends or the deadline
// passes, when Err is not nil.
type maxTimeCtx struct {
	context.Context // the command's: killOp, a disconnect, shutdown end it
	deadline        time.Time

	once  sync.Once
	timed context.Context // from the first wait; nil if the command ended first
	stop  context.CancelFunc
	// ended is set when the command returned before its deadline, as the
	// cancel of context.WithTimeout would: Err is then Canceled.
	ended atomic.Bool
}

// newMaxTimeCtx is parent with a deadline d from now; release ends it.
// Handler.run defers release itself: a CancelFunc (a method value) would
// cost every command with maxTimeMS an allocation. into, when not nil,
// is a zero maxTimeCtx no one else uses, which it sets up instead of
// allocating one.
func newMaxTimeCtx(parent context.Context, d time.Duration, into *maxTimeCtx) *maxTimeCtx {
	if into == nil {
		into = new(maxTimeCtx)
	}
	into.Context, into.deadline = parent, time.Now().Add(d)
	return into
}

func (c *maxTimeCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *maxTimeCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.ended.Load() {
		return context.Canceled
	}
	if time.Now().Before(c.deadline) {
		return nil
	}
	return c.waitable().Err()
}

func (c *maxTimeCtx) Done() <-chan struct{} { return c.waitable().Done() }

// AfterFunc lets context.AfterFunc and the children of this context
// register with the timer's context, as they would with WithTimeout's,
// instead of each starting a goroutine to watch Done.
func (c *maxTimeCtx) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.waitable(), f)
}

// waitable is the context whose Done waits for the parent or the
// deadline, made on the first call.
func (c *maxTimeCtx) waitable() context.Context {
	c.once.Do(func() { c.timed, c.stop = context.WithDeadline(c.Context, c.deadline) })
	if c.timed == nil { // released before anything waited
		ended, cancel := context.WithCancel(c.Context)
		cancel()
		return ended
	}
	return c.timed
}

// release ends the context when its command returns.
func (c *maxTimeCtx) release() {
	if c.Err() == nil {
		c.ended.Store(true)
	}
	c.once.Do(func() {})
	if c.stop != nil {
		c.stop()
	}
}
