package wireclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
)

// Defaults for Options' zero fields.
const (
	DefaultDialTimeout = 10 * time.Second
	DefaultMaxConns    = 16
	DefaultIdleTimeout = time.Minute
)

// Options configure a Client. The zero value dials in plaintext without
// authenticating.
type Options struct {
	// DialTimeout bounds connecting, the TLS handshake and authentication.
	DialTimeout time.Duration
	// TLS, when set, is used for every connection (set ServerName or
	// leave it empty to use the host's name).
	TLS *tls.Config
	// Credential logs each connection in; zero means no authentication.
	// A member of a keyFile cluster passes KeyFile.Credential().
	Credential auth.Credential
	// MaxConnsPerHost bounds the connections open to one host, in use or
	// idle; callers beyond it wait.
	MaxConnsPerHost int
	// IdleTimeout closes connections unused for this long.
	IdleTimeout time.Duration
	// Clock times idleness; nil means the real clock.
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = DefaultMaxConns
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// ErrClosed is returned by a Client after Close.
var ErrClosed = errors.New("wireclient: client closed")

// Client holds a connection pool per host. It is safe for concurrent use.
type Client struct {
	opts Options
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	pools  map[string]*pool
	closed bool
}

// New returns a Client and starts its idle-connection janitor; Close
// stops it.
func New(opts Options) *Client {
	c := &Client{opts: opts.withDefaults(), done: make(chan struct{}), pools: map[string]*pool{}}
	c.wg.Add(1)
	go c.janitor()
	return c
}

// Run sends cmd to db on host ("host:port") and returns the reply
// document, whatever its ok: a command error is the caller's to forward
// or turn into an error (see ReplyError). The error is for what kept the
// command from getting a reply: the context, the pool, the network.
func (c *Client) Run(ctx context.Context, host, db string, cmd bson.D) (bson.D, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // before taking a connection it would have to discard
	}
	p, err := c.pool(host)
	if err != nil {
		return nil, err
	}
	cn, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	reply, err := cn.roundTrip(ctx, db, cmd)
	p.release(cn, err == nil)
	if err != nil {
		return nil, err
	}
	return reply, nil
}

func (c *Client) pool(host string) (*pool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p, ok := c.pools[host]
	if !ok {
		p = newPool(host, c.opts)
		c.pools[host] = p
	}
	return p, nil
}

// PoolStats describes one host's pool.
type PoolStats struct {
	Open, Idle int
}

// Stats returns host's pool counts (zero for a host never used).
func (c *Client) Stats(host string) PoolStats {
	c.mu.Lock()
	p := c.pools[host]
	c.mu.Unlock()
	if p == nil {
		return PoolStats{}
	}
	return p.stats()
}

// CloseIdle closes every connection idle for IdleTimeout or longer; the
// janitor calls it twice per IdleTimeout.
func (c *Client) CloseIdle() {
	for _, p := range c.allPools() {
		p.closeIdle(c.opts.Clock.Now())
	}
}

func (c *Client) allPools() []*pool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*pool, 0, len(c.pools))
	for _, p := range c.pools {
		out = append(out, p)
	}
	return out
}

func (c *Client) janitor() {
	defer c.wg.Done()
	t := c.opts.Clock.NewTimer(c.opts.IdleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C():
			c.CloseIdle()
			t.Reset(c.opts.IdleTimeout / 2)
		}
	}
}

// Close closes idle connections and stops the janitor; connections in
// use close when they are released. Run fails with ErrClosed afterwards.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	pools := c.pools
	c.mu.Unlock()
	close(c.done)
	c.wg.Wait()
	for _, p := range pools {
		p.shutdown()
	}
	return nil
}

// ReplyError returns the command error a reply reports ({ok: 0, code,
// errmsg, codeName}) as a *CommandError, or nil for ok: 1.
func ReplyError(reply bson.D) error {
	var e CommandError
	for _, el := range reply {
		switch el.Key {
		case "ok":
			if bsonutil.TrueValue(el.Value) {
				return nil
			}
		case "code":
			e.Code, _ = el.Value.(int32)
		case "codeName":
			e.CodeName, _ = el.Value.(string)
		case "errmsg":
			e.Msg, _ = el.Value.(string)
		}
	}
	return &e
}

// CommandError is a command's error reply.
type CommandError struct {
	Code     int32
	CodeName string
	Msg      string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("wireclient: %s (%d): %s", e.CodeName, e.Code, e.Msg)
}

// NetworkError reports a failure to reach host or to exchange a message
// with it; the connection is closed. A router answers it as mongos does
// (HostUnreachable, NetworkTimeout) without marking itself down.
type NetworkError struct {
	Host string
	Err  error
}

func (e *NetworkError) Error() string { return fmt.Sprintf("wireclient: %s: %v", e.Host, e.Err) }

// Unwrap returns the cause.
func (e *NetworkError) Unwrap() error { return e.Err }
