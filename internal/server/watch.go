package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrClientDisconnected is the cause of an operation's context ending
// because its client closed the connection.
var ErrClientDisconnected = errors.New("server: client disconnected")

// watchAfter is how long a command runs before its connection is watched
// for the client leaving: most commands finish sooner, and watching costs
// a goroutine and two deadline changes.
const watchAfter = 100 * time.Millisecond

// peerWatch is a connection's watch for its client leaving during a long
// command. Every command of the connection reuses it (its timer too), so
// a command that ends within watchAfter costs only its context and a
// clock reading. The timer is not moved for each command: while commands
// follow each other it fires once per watchAfter, and puts itself off to
// watchAfter after the start of the command then running; it stops when
// it finds the connection between commands.
type peerWatch struct {
	timer *time.Timer // starts the watch once a command has run watchAfter

	mu sync.Mutex
	// cancel ends the running command's context; nil between commands,
	// which tells a timer that fired late that there is nothing to watch.
	cancel context.CancelCauseFunc
	// began is when the running command began, as time since the
	// server's epoch: time.Since reads the monotonic clock alone, half
	// the cost of time.Now, and every command reads it.
	began   time.Duration
	armed   bool          // the timer is set
	started bool          // the watch is reading the connection
	done    chan struct{} // closed when the started watch has finished
}

// watchPeer returns the context a command runs under: it ends when the
// server shuts down or, once the command has run for watchAfter, when the
// client closes the connection (a read returns EOF or a reset).
// cancel ends it early. stopWatch ends it; it must be called on the
// connection goroutine before the next read.
func (c *Conn) watchPeer() (context.Context, context.CancelCauseFunc) {
	if c.ctx == nil {
		c.ctx, c.endCtx = context.WithCancel(c.srv.ctx)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	w := &c.watch
	w.mu.Lock()
	w.cancel, w.began = cancel, time.Since(c.srv.epoch)
	if !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(watchAfter, c.watchClient)
		} else {
			w.timer.Reset(watchAfter)
		}
	}
	w.mu.Unlock()
	return ctx, cancel
}

// watchClient runs on the timer's goroutine: it reads the connection until
// the command ends, and cancels the command if the client leaves first.
func (c *Conn) watchClient() {
	w := &c.watch
	w.mu.Lock()
	cancel := w.cancel
	if cancel == nil || w.started {
		w.armed = false
		w.mu.Unlock()
		return
	}
	if left := watchAfter - (time.Since(c.srv.epoch) - w.began); left > 0 {
		w.timer.Reset(left) // a later command than the one it was set for
		w.mu.Unlock()
		return
	}
	w.armed = false
	w.started = true
	done := make(chan struct{})
	w.done = done
	// Under mu, so stopWatch's wake-up deadline always comes after it.
	err := c.nc.SetReadDeadline(time.Time{})
	w.mu.Unlock()
	defer close(done)
	if hook := c.srv.cfg.watchStarted; hook != nil {
		hook()
	}
	if err != nil {
		return
	}
	// Bytes of a pipelined next request are left buffered for the loop.
	if _, err := c.br.Peek(1); err != nil && !isTimeout(err) {
		cancel(ErrClientDisconnected)
	}
}

// stopWatch ends the running command's watch and context.
func (c *Conn) stopWatch() {
	w := &c.watch
	w.mu.Lock()
	cancel, running, done := w.cancel, w.started, w.done
	w.cancel, w.started, w.done = nil, false, nil
	w.mu.Unlock()
	if running {
		_ = c.nc.SetReadDeadline(time.Now()) // wakes the Peek
		<-done
		c.readDeadline = true // next clears it
	}
	cancel(nil)
}
