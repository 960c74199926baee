package wireclient

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// pool is one host's connections: at most max open. The idle ones wait in
// a channel, so that a caller waiting for a connection takes the first one
// released; a waiter that watched only for a free slot would sleep until
// some connection closed.
type pool struct {
	host  string
	opts  Options
	slots chan struct{} // one token per open connection
	idle  chan *conn    // as large as slots, so a release never blocks

	mu     sync.Mutex
	closed bool
}

func newPool(host string, opts Options) *pool {
	return &pool{host: host, opts: opts, slots: make(chan struct{}, opts.MaxConnsPerHost),
		idle: make(chan *conn, opts.MaxConnsPerHost)}
}

// acquire returns an idle connection or dials one, waiting (as long as
// ctx allows) while max connections are open and none is idle.
func (p *pool) acquire(ctx context.Context) (*conn, error) {
	select {
	case cn := <-p.idle:
		return cn, nil
	default:
	}
	select {
	case cn := <-p.idle:
		return cn, nil
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wireclient: waiting for a connection to %s: %w", p.host, ctx.Err())
	}
	cn, err := dial(ctx, p.host, p.opts)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return cn, nil
}

// release returns a connection that completed its exchange to the idle
// ones, and closes one that did not (its stream may hold half a message).
func (p *pool) release(cn *conn, healthy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if healthy && !p.closed {
		cn.lastUsed = p.opts.Clock.Now()
		cn.releaseBuffers() // an idle connection keeps no big buffer
		p.idle <- cn
		return
	}
	p.discard(cn)
}

func (p *pool) discard(cn *conn) {
	_ = cn.close()
	<-p.slots
}

// takeIdle empties the idle channel.
func (p *pool) takeIdle() []*conn {
	var out []*conn
	for {
		select {
		case cn := <-p.idle:
			out = append(out, cn)
		default:
			return out
		}
	}
}

// closeIdle closes connections unused since IdleTimeout before now.
func (p *pool) closeIdle(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cn := range p.takeIdle() {
		if now.Sub(cn.lastUsed) >= p.opts.IdleTimeout || p.closed {
			p.discard(cn)
		} else {
			p.idle <- cn
		}
	}
}

func (p *pool) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, cn := range p.takeIdle() {
		p.discard(cn)
	}
}

func (p *pool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Open: len(p.slots), Idle: len(p.idle)}
}
