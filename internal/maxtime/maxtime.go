// Package maxtime is the context a command runs under when it carries
// maxTimeMS: its deadline's timer starts only when something waits on it.
package maxtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Context is a command's context with maxTimeMS's deadline. Drivers
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
type Context struct {
	context.Context // the command's: killOp, a disconnect, shutdown end it
	deadline        time.Time

	once  sync.Once
	timed context.Context // from the first wait; nil if the command ended first
	stop  context.CancelFunc
	// ended is set when the command returned before its deadline, as the
	// cancel of context.WithTimeout would: Err is then Canceled.
	ended atomic.Bool
}

// New is parent with a deadline d from now; Release ends it. The command
// layer defers Release itself: a CancelFunc (a method value) would cost
// every command with maxTimeMS an allocation. into, when not nil, is a
// zero Context no one else uses, which New sets up instead of allocating
// one.
func New(parent context.Context, d time.Duration, into *Context) *Context {
	return NewAt(parent, time.Time{}, d, into)
}

// NewAt is New with the deadline d after start, a reading of the real
// clock (time.Now) that the caller made as the command began, so that
// the command does not read the clock again; zero start reads it.
func NewAt(parent context.Context, start time.Time, d time.Duration, into *Context) *Context {
	if into == nil {
		into = new(Context)
	}
	if start.IsZero() {
		start = time.Now()
	}
	into.Context, into.deadline = parent, start.Add(d)
	return into
}

// Deadline is maxTimeMS's.
func (c *Context) Deadline() (time.Time, bool) { return c.deadline, true }

// Err reads the clock while nothing waits (no timer to ask): the
// monotonic clock alone (time.Until of a deadline that has its reading),
// half the cost of time.Now, as scans ask often.
func (c *Context) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.ended.Load() {
		return context.Canceled
	}
	if time.Until(c.deadline) > 0 {
		return nil
	}
	return c.waitable().Err()
}

// Done starts the deadline's timer, once.
func (c *Context) Done() <-chan struct{} { return c.waitable().Done() }

// AfterFunc lets context.AfterFunc and the children of this context
// register with the timer's context, as they would with WithTimeout's,
// instead of each starting a goroutine to watch Done.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.waitable(), f)
}

// waitable is the context whose Done waits for the parent or the
// deadline, made on the first call.
func (c *Context) waitable() context.Context {
	c.once.Do(func() { c.timed, c.stop = context.WithDeadline(c.Context, c.deadline) })
	if c.timed == nil { // released before anything waited
		ended, cancel := context.WithCancel(c.Context)
		cancel()
		return ended
	}
	return c.timed
}

// Release ends the context when its command returns.
func (c *Context) Release() {
	if c.Err() == nil {
		c.ended.Store(true)
	}
	c.once.Do(func() {})
	if c.stop != nil {
		c.stop()
	}
}
