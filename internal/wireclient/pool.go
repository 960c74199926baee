package wireclient

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// pool is one host's connections: at most max open, the idle ones kept
// newest last so the oldest are the first to time out.
type pool struct {
	host  string
	opts  Options
	slots chan struct{} // one token per open connection

	mu     sync.Mutex
	idle   []*conn
	closed bool
}

func newPool(host string, opts Options) *pool {
	return &pool{host: host, opts: opts, slots: make(chan struct{}, opts.MaxConnsPerHost)}
}

// acquire returns an idle connection or dials one, waiting (as long as
// ctx allows) while max connections are open and none is idle.
func (p *pool) acquire(ctx context.Context) (*conn, error) {
	if cn := p.popIdle(); cn != nil {
		return cn, nil
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wireclient: waiting for a connection to %s: %w", p.host, ctx.Err())
	}
	// A connection may have come back while this one waited for a slot.
	if cn := p.popIdle(); cn != nil {
		<-p.slots
		return cn, nil
	}
	cn, err := dial(ctx, p.host, p.opts)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return cn, nil
}

func (p *pool) popIdle() *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	cn := p.idle[n-1]
	p.idle = p.idle[:n-1]
	return cn
}

// release returns a connection that completed its exchange to the idle
// list, and closes one that did not (its stream may hold half a message).
func (p *pool) release(cn *conn, healthy bool) {
	p.mu.Lock()
	if healthy && !p.closed {
		cn.lastUsed = p.opts.Clock.Now()
		cn.reader.Release() // an idle connection keeps no big reply buffer
		p.idle = append(p.idle, cn)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.discard(cn)
}

func (p *pool) discard(cn *conn) {
	_ = cn.close()
	<-p.slots
}

// closeIdle closes connections unused since IdleTimeout before now.
func (p *pool) closeIdle(now time.Time) {
	p.mu.Lock()
	var expired []*conn
	keep := p.idle[:0]
	for _, cn := range p.idle {
		if now.Sub(cn.lastUsed) >= p.opts.IdleTimeout {
			expired = append(expired, cn)
		} else {
			keep = append(keep, cn)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.mu.Unlock()
	for _, cn := range expired {
		p.discard(cn)
	}
}

func (p *pool) shutdown() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, cn := range idle {
		p.discard(cn)
	}
}

func (p *pool) stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Open: len(p.slots), Idle: len(p.idle)}
}
