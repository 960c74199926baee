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

// watchPeer returns the context a command runs under: it ends when the
// server shuts down or, once the command has run for watchAfter, when the
// client closes the connection (a read returns EOF or a reset). stop ends
// the watch; it must be called on the connection goroutine before the next
// read.
func (c *Conn) watchPeer() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(c.srv.ctx)
	var (
		mu               sync.Mutex
		started, stopped bool
		done             = make(chan struct{})
	)
	t := time.AfterFunc(watchAfter, func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		started = true
		// Under mu, so stop's wake-up deadline always comes after it.
		err := c.nc.SetReadDeadline(time.Time{})
		mu.Unlock()
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
	})
	return ctx, func() {
		t.Stop()
		mu.Lock()
		stopped = true
		running := started
		mu.Unlock()
		if running {
			_ = c.nc.SetReadDeadline(time.Now()) // wakes the Peek
			<-done
			c.readDeadline = true // next clears it
		}
		cancel(nil)
	}
}
