// Package server accepts MongoDB wire-protocol connections and runs each
// request through a Handler: it owns the listener, the per-connection
// read/handle/reply loop, connection limits and graceful shutdown, and
// knows nothing about what commands mean.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wire"
)

// Defaults applied by New.
const (
	// DefaultMaxConns is MongoDB's default maxIncomingConnections on Linux;
	// New lowers it to 80% of the file-descriptor limit (connLimit).
	DefaultMaxConns       = 1_000_000
	DefaultMessageTimeout = 60 * time.Second
)

// DefaultCompressors returns the compressors accepted when
// Config.Compressors is nil.
func DefaultCompressors() []string { return []string{"snappy", "zlib", "zstd"} }

// ErrServerClosed is returned by Serve and Listen after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// ErrShuttingDown is the cause of an operation's context ending because
// the server is shutting down.
var ErrShuttingDown = errors.New("server: shutting down")

// Config configures a Server.
type Config struct {
	Addr     string // "127.0.0.1:27017"; port 0 picks a free port
	MaxConns int    // 0 → DefaultMaxConns
	// Compressors this server accepts, in preference order. nil means
	// DefaultCompressors; an empty non-nil slice disables compression.
	Compressors []string
	// MessageTimeout bounds how long a message may take to arrive once its
	// first byte has: a stalled client cannot hold a connection mid-message
	// forever. 0 → DefaultMessageTimeout. Replies get the same bound.
	MessageTimeout time.Duration
	// IdleTimeout closes a connection that sends no request for this long;
	// 0 keeps idle connections open (mongod's default).
	IdleTimeout time.Duration
	Logger      *slog.Logger // nil → slog.Default()
	// TLS is the server's certificate setup; with TLSMode other than
	// TLSDisabled it must be set.
	TLS     *tls.Config
	TLSMode TLSMode

	// watchStarted, when set (by tests), runs on the goroutine that
	// watches for the client leaving once it has started, so that a test
	// can make the command end at that moment.
	watchStarted func()
}

// Handler runs commands.
type Handler interface {
	// Handle runs one command and returns the reply document (never nil).
	// It is called on the connection's goroutine, one command at a time per
	// connection; ctx is cancelled when Shutdown starts (cause
	// ErrShuttingDown) and when the client disconnects during a long
	// command (cause ErrClientDisconnected).
	Handle(ctx context.Context, c *Conn, cmd *Command) bson.D
}

// Command is one request, decoded.
type Command struct {
	DB         string // from $db (OP_MSG) or from fullCollectionName "db.$cmd" (OP_QUERY)
	Name       string // first key of the body
	Body       bson.D // merged body (kind-1 sequences as arrays), $db included
	Legacy     bool   // arrived as OP_QUERY
	MoreToCome bool   // client expects no reply
	Size       int    // request size in bytes, as on the wire
	// Compressor names the compressor the request arrived with ("snappy",
	// "zlib", "zstd", "noop"), or is empty if it was not compressed.
	Compressor string
	// Cancel ends the context Handle was given, so that a handler can
	// stop the command (killOp) without deriving a context of its own;
	// nil when the caller gave none.
	Cancel context.CancelCauseFunc
}

// Stats are connection counters for serverStatus.connections.
type Stats struct {
	Current      int64 // open connections
	Available    int64 // MaxConns - Current
	TotalCreated int64 // connections accepted since start
	Rejected     int64 // connections refused because of MaxConns
	Active       int64 // connections with a request in progress
	// Network traffic, as serverStatus.network reports it.
	BytesIn, BytesOut, Requests int64
	// BufferBytes is the read and reply buffer memory connections hold,
	// as of their last request.
	BufferBytes int64
}

// Server serves the MongoDB wire protocol on one listener.
type Server struct {
	cfg         Config
	h           Handler
	log         *slog.Logger
	codec       *wire.Codec
	compressors []wire.CompressorID // accepted, in preference order

	// ctx is the parent of every Handle call's, through its connection's
	// (Conn.ctx); cancel is called once Shutdown has finished or given up
	// waiting.
	ctx    context.Context
	cancel context.CancelFunc
	// stopOps interrupts running operations at the start of Shutdown, as
	// mongod does, so that they answer at once instead of running on.
	stopOps context.CancelCauseFunc

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*Conn]struct{}
	wg       sync.WaitGroup // one per registered connection
	shutdown atomic.Bool
	// draining is closed when Shutdown starts, so that requests that wait
	// by design (an awaitable hello) answer at once.
	draining chan struct{}

	// Conn IDs come from the Server rather than a package variable; a
	// process runs one Server, so they are process-unique in practice.
	lastConnID   atomic.Int64
	current      atomic.Int64
	totalCreated atomic.Int64
	rejected     atomic.Int64
	active       atomic.Int64
	traffic      traffic
	bufferBytes  atomic.Int64
	memory       *memoryReturner
	// epoch is when the server was made; times kept as time since it
	// (peerWatch.began) read only the monotonic clock.
	epoch time.Time
}

// New returns a Server that will run commands with h.
func New(cfg Config, h Handler) *Server {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MessageTimeout <= 0 {
		cfg.MessageTimeout = DefaultMessageTimeout
	}
	if cfg.Compressors == nil {
		cfg.Compressors = DefaultCompressors()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.MaxConns = connLimit(cfg.MaxConns, descriptorLimit(), cfg.Logger)
	s := &Server{cfg: cfg, h: h, log: cfg.Logger, conns: make(map[*Conn]struct{}), draining: make(chan struct{}), epoch: time.Now()}
	s.memory = newMemoryReturner(func() bool { return s.active.Load() == 0 })
	for _, name := range cfg.Compressors {
		id, ok := wire.CompressorByName(name)
		if !ok {
			s.log.Warn("ignoring unknown compressor", "compressor", name)
			continue
		}
		s.compressors = append(s.compressors, id)
	}
	s.codec = wire.NewCodec(s.compressors...)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ctx, s.stopOps = context.WithCancelCause(s.ctx)
	return s
}

// Listen opens the listener, so Addr is known before Serve runs.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.shutdown.Load():
		ln.Close()
		return ErrServerClosed
	case s.ln != nil:
		ln.Close()
		return fmt.Errorf("server: already listening on %s", s.ln.Addr())
	}
	s.ln = ln
	s.log.Debug("listening", "addr", ln.Addr().String())
	return nil
}

// Addr returns the listening address, or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections until Shutdown. Listen must have succeeded.
func (s *Server) Serve() error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("server: Serve called before Listen")
	}
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutdown.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("server: accept: %w", err)
			}
			// Running out of file descriptors and the like pass; back off
			// instead of spinning or giving up.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.accept(nc)
	}
}

// accept admits nc within MaxConns and starts its goroutine.
func (s *Server) accept(nc net.Conn) {
	if n := s.current.Add(1); n > int64(s.cfg.MaxConns) {
		s.current.Add(-1)
		s.rejected.Add(1)
		s.log.Warn("connection refused: too many open connections",
			"remote", nc.RemoteAddr().String(), "max", s.cfg.MaxConns)
		nc.Close()
		return
	}
	c := newConn(s, nc)
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		s.current.Add(-1)
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	// Added under mu, after the shutdown check, so Shutdown's Wait never
	// races with an Add.
	s.wg.Add(1)
	s.mu.Unlock()
	s.totalCreated.Add(1)
	s.log.Debug("connection accepted", "conn", c.id, "remote", c.remote, "current", s.current.Load())
	go c.serve()
}

func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.current.Add(-1)
	s.wg.Done()
}

// Shutdown stops accepting, closes idle connections, lets in-flight
// commands finish and send their replies, and waits for every connection
// to end. If ctx ends first, it cancels the handlers' context, closes all
// connections and returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.shutdown.Swap(true) {
		close(s.draining)
	}
	s.mu.Lock()
	var lnErr error
	if s.ln != nil {
		if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			lnErr = fmt.Errorf("server: close listener: %w", err)
		}
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Busy connections notice the flag when they next go idle.
	for _, c := range conns {
		c.closeIfIdle()
	}
	s.stopOps(ErrShuttingDown)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	defer s.cancel()
	select {
	case <-done:
		return lnErr
	case <-ctx.Done():
		s.cancel()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return fmt.Errorf("server: shutdown: %w", ctx.Err())
	}
}

// BytesIn returns the bytes read from clients so far: it moves whenever
// the network is read (bgyield watches it).
func (s *Server) BytesIn() int64 { return s.traffic.in.Load() }

// Stats returns the connection counters.
func (s *Server) Stats() Stats {
	cur := s.current.Load()
	return Stats{
		Current:      cur,
		Available:    max(int64(s.cfg.MaxConns)-cur, 0),
		TotalCreated: s.totalCreated.Load(),
		Rejected:     s.rejected.Load(),
		Active:       s.active.Load(),
		BytesIn:      s.traffic.in.Load(),
		BytesOut:     s.traffic.out.Load(),
		Requests:     s.traffic.requests.Load(),
		BufferBytes:  s.bufferBytes.Load(),
	}
}

func (s *Server) accepts(id wire.CompressorID) bool {
	for _, a := range s.compressors {
		if a == id {
			return true
		}
	}
	return false
}
