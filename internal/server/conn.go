package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wire"
)

// Connection states, for handing idle connections to Shutdown safely.
const (
	stateActive  int32 = iota // running a request or sending its reply
	stateIdle                 // waiting for a request's first byte
	stateReading              // reading the rest of a request
	stateClosed               // closed by Shutdown while idle or reading
)

const ioBufferSize = 8 << 10

// errClosing ends a connection loop because the server is shutting down.
var errClosing = errors.New("server: shutting down")

// Conn is one client connection. Its methods are safe to call from the
// Handler (which runs on the connection's goroutine) and from elsewhere.
type Conn struct {
	srv    *Server
	nc     net.Conn
	id     int64
	desc   string
	remote string
	local  string

	state      atomic.Int32
	hangUp     atomic.Bool  // close instead of replying (HangUp)
	compressor atomic.Int32 // negotiated wire.CompressorID, or -1 for none

	// values are SetValue's, replaced whole on each change so that Value,
	// which auth calls on every command, reads them without a lock. mu
	// orders the changes.
	mu     sync.Mutex
	values atomic.Pointer[[]connValue]

	// Owned by the connection goroutine.
	br            *bufio.Reader
	rd            *wire.Reader
	wr            *wire.Writer
	buffers       connBuffers
	cmd           Command   // the request being run, reused by the next
	watch         peerWatch // for the client leaving during a long command
	busy          bool      // counted in Server.active
	readDeadline  bool      // a read deadline is set
	tc            *tls.Conn // the TLS layer over nc, once started
	writeDeadline time.Time // the write deadline currently set
	// ctx is the server's, for this connection alone: its commands'
	// contexts are children of it, not of the server's, whose lock all
	// connections would take twice a command to add and remove them.
	// Made by the first command (watchPeer), ended by finish.
	ctx    context.Context
	endCtx context.CancelFunc
}

func newConn(s *Server, nc net.Conn) *Conn {
	c := &Conn{
		srv:    s,
		nc:     nc,
		id:     s.lastConnID.Add(1),
		remote: nc.RemoteAddr().String(),
		local:  nc.LocalAddr().String(),
	}
	c.desc = connDesc(c.id)
	c.state.Store(stateActive)
	c.compressor.Store(-1)
	c.br = bufio.NewReaderSize(countingReader{nc, &s.traffic.in}, ioBufferSize)
	c.rd = wire.NewReader(c.br, s.codec)
	c.wr = wire.NewWriter(deadlineWriter{c}, s.codec)
	c.buffers.total = &s.bufferBytes
	return c
}

// ID returns the connection's number: unique within the Server, from 1,
// increasing in accept order.
func (c *Conn) ID() int64 { return c.id }

// Desc returns the connection's name in currentOp and mongod's logs:
// "conn" and its ID.
func (c *Conn) Desc() string { return c.desc }

func connDesc(id int64) string { return "conn" + strconv.FormatInt(id, 10) }

// RemoteAddr returns the client's address.
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr returns the server-side address of the connection.
func (c *Conn) LocalAddr() string { return c.local }

// NegotiateCompression takes the client's `compression` list from hello,
// keeps those the server accepts (in client order, without duplicates),
// remembers the first for compressing later replies, and returns the kept
// list. With nothing in common, replies go uncompressed and it returns nil.
func (c *Conn) NegotiateCompression(requested []string) []string {
	var kept []string
	first := int32(-1)
	for _, name := range requested {
		id, ok := wire.CompressorByName(name)
		if !ok || !c.srv.accepts(id) || contains(kept, name) {
			continue
		}
		if first < 0 {
			first = int32(id)
		}
		kept = append(kept, name)
	}
	c.compressor.Store(first)
	return kept
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// HangUp makes the connection close once the current request is handled,
// without replying: mongod's failCommand closeConnection.
func (c *Conn) HangUp() { c.hangUp.Store(true) }

// connValue is one key SetValue stored.
type connValue struct {
	key string
	v   any
}

// Value returns what SetValue stored under key, or nil.
func (c *Conn) Value(key string) any {
	if vs := c.values.Load(); vs != nil {
		for _, e := range *vs {
			if e.key == key {
				return e.v
			}
		}
	}
	return nil
}

// SetValue stores v under key for the connection's lifetime; a nil v
// removes the key. A connection holds a few keys, set once or twice.
func (c *Conn) SetValue(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next []connValue
	if vs := c.values.Load(); vs != nil {
		next = make([]connValue, 0, len(*vs)+1)
		for _, e := range *vs {
			if e.key != key {
				next = append(next, e)
			}
		}
	}
	if v != nil {
		next = append(next, connValue{key, v})
	}
	c.values.Store(&next)
}

// closeIfIdle closes the connection if it is waiting for a request or
// still receiving one, and reports whether it did. A request not yet fully
// read has had no effect, so dropping it is safe; waiting for it could
// hold Shutdown for a whole MessageTimeout.
func (c *Conn) closeIfIdle() bool {
	if !c.state.CompareAndSwap(stateIdle, stateClosed) && !c.state.CompareAndSwap(stateReading, stateClosed) {
		return false
	}
	c.nc.Close()
	return true
}

// serve is the connection loop: read, handle, reply, until the client
// leaves, the stream breaks, or the server shuts down.
func (c *Conn) serve() {
	defer c.finish()
	// Handler panics are caught per command; this catches our own bugs, so
	// that one connection's failure never takes the process down.
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("connection loop panicked", "conn", c.id, "remote", c.remote,
				"panic", r, "stack", string(debug.Stack()))
		}
	}()
	if !c.secure() {
		return
	}
	for {
		msg, err := c.next()
		if err != nil {
			if c.readFailed(err) {
				continue
			}
			return
		}
		if !c.handle(msg) {
			return
		}
	}
}

func (c *Conn) finish() {
	if c.endCtx != nil {
		c.endCtx()
	}
	c.nc.Close()
	c.buffers.set(0)
	if c.busy {
		c.srv.active.Add(-1)
	}
	c.srv.forget(c)
	c.srv.log.Debug("connection ended", "conn", c.id, "remote", c.remote)
}

// next waits, without a deadline, for a request to start, then gives the
// rest of it MessageTimeout to arrive.
func (c *Conn) next() (*wire.Message, error) {
	if c.readDeadline {
		if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
			return nil, err
		}
		c.readDeadline = false
	}
	c.setBusy(false)
	c.releaseBuffers()
	c.state.Store(stateIdle)
	// Checked after going idle so Shutdown either sees us idle or we see it.
	if c.srv.shutdown.Load() {
		return nil, errClosing
	}
	if err := c.waitForRequest(); err != nil {
		return nil, err
	}
	if !c.state.CompareAndSwap(stateIdle, stateReading) {
		return nil, errClosing
	}
	c.setBusy(true)
	if !c.messageBuffered() {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.MessageTimeout)); err != nil {
			return nil, err
		}
		c.readDeadline = true
	}
	msg, err := c.rd.ReadMessage()
	// Once the whole request is in, Shutdown lets it run to its reply.
	if !c.state.CompareAndSwap(stateReading, stateActive) {
		return nil, errClosing
	}
	return msg, err
}

// releaseBuffers shrinks the connection's buffers before it waits for a
// request, so an idle connection holds at most a few hundred kilobytes
// whatever it last sent or received.
func (c *Conn) releaseBuffers() {
	c.cmd = Command{} // the last request, decoded: a big insert's is big
	c.srv.memory.released(c.rd.Release()+c.wr.Release(), c.srv.active.Load() == 0)
	c.buffers.set(int64(ioBufferSize + c.rd.Held() + c.wr.Held()))
}

// messageBuffered reports whether the whole next message is already in
// the read buffer, in which case no deadline (and no timer) is needed.
func (c *Conn) messageBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	b, err := c.br.Peek(4)
	if err != nil {
		return false
	}
	l := int(int32(binary.LittleEndian.Uint32(b)))
	return l >= wire.HeaderSize && l <= n
}

func (c *Conn) setBusy(b bool) {
	if c.busy == b {
		return
	}
	c.busy = b
	if b {
		c.srv.active.Add(1)
	} else {
		c.srv.active.Add(-1)
	}
}

// readFailed deals with a failed read and reports whether the connection
// can go on.
func (c *Conn) readFailed(err error) bool {
	var we *wire.Error
	if !errors.As(err, &we) {
		c.logReadEnd(err)
		return false
	}
	c.srv.log.Info("malformed message", "conn", c.id, "remote", c.remote,
		"code", int32(we.Code), "err", we.Error(), "closing", we.Fatal)
	if we.Consumed && expectsReply(we.OpCode, we.Flags) {
		reply := mongoerr.Reply(we.MongoError())
		if !c.send(we.OpCode, we.Header.RequestID, "", reply) {
			return false
		}
	}
	return !we.Fatal
}

// expectsReply reports whether a request with this opcode and these flags
// is answered at all.
func expectsReply(op wire.OpCode, flags uint32) bool {
	switch op {
	case wire.OpQuery:
		return true
	case wire.OpMsg:
		return flags&wire.FlagMoreToCome == 0
	}
	return false
}

func (c *Conn) logReadEnd(err error) {
	switch {
	case errors.Is(err, errClosing), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.srv.log.Debug("connection closed", "conn", c.id, "remote", c.remote)
	case errors.Is(err, errIdleTimeout):
		c.srv.log.Info("idle connection timed out; closing", "conn", c.id, "remote", c.remote,
			"timeout", c.srv.cfg.IdleTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.srv.log.Info("client disconnected mid-message", "conn", c.id, "remote", c.remote)
	case isTimeout(err):
		c.srv.log.Info("message not received in time; closing", "conn", c.id, "remote", c.remote,
			"timeout", c.srv.cfg.MessageTimeout)
	default:
		c.srv.log.Info("read failed; closing", "conn", c.id, "remote", c.remote, "err", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handle runs one request and sends its reply; it reports whether the
// connection can go on.
func (c *Conn) handle(msg *wire.Message) bool {
	c.srv.traffic.requests.Add(1)
	cmd, errReply := c.command(msg)
	if errReply == nil && streams(msg, cmd) {
		return c.stream(msg, cmd)
	}
	reply := errReply
	if reply == nil {
		reply = c.call(cmd)
	}
	if c.hangUp.Load() {
		return false
	}
	if msg.MoreToCome() {
		return true
	}
	return c.send(msg.OpCode, msg.Header.RequestID, cmd.Name, reply)
}

// call runs the handler, turning a panic into an InternalError reply so
// one bad command cannot take the server down.
func (c *Conn) call(cmd *Command) (reply bson.D) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("command panicked", "conn", c.id, "command", cmd.Name,
				"panic", r, "stack", string(debug.Stack()))
			reply = mongoerr.Reply(mongoerr.Newf(mongoerr.InternalError, "internal error while running %s", cmd.Name))
		}
	}()
	ctx, cancel := c.watchPeer()
	defer c.stopWatch()
	cmd.Cancel = cancel
	reply = c.srv.h.Handle(ctx, c, cmd)
	if reply == nil {
		c.srv.log.Error("handler returned no reply", "conn", c.id, "command", cmd.Name)
		reply = mongoerr.Reply(mongoerr.Newf(mongoerr.InternalError, "no reply for %s", cmd.Name))
	}
	return reply
}

// send writes reply in the form the request's opcode calls for and
// reports whether the connection can go on. A reply that cannot be
// encoded is replaced by an error reply.
func (c *Conn) send(op wire.OpCode, requestID int32, name string, reply bson.D) bool {
	err := c.write(op, requestID, name, reply)
	if err == nil {
		return true
	}
	if ee := (*wire.EncodeError)(nil); errors.As(err, &ee) {
		c.srv.log.Error("cannot encode reply", "conn", c.id, "command", name, "err", err)
		err = c.write(op, requestID, "", mongoerr.Reply(mongoerr.Newf(mongoerr.InternalError, "cannot encode reply: %v", ee.Err)))
	}
	if err != nil {
		c.srv.log.Info("write failed; closing", "conn", c.id, "remote", c.remote, "err", err)
		return false
	}
	return true
}

func (c *Conn) write(op wire.OpCode, requestID int32, name string, reply bson.D) error {
	if op == wire.OpQuery {
		return c.wr.WriteReply(requestID, reply)
	}
	if id := c.compressor.Load(); id >= 0 && name != "" && !neverCompressed(name) {
		return c.wr.WriteCompressedMsg(requestID, reply, wire.CompressorID(id))
	}
	return c.wr.WriteMsgD(requestID, reply)
}

// neverCompressed lists the commands whose messages must not be compressed
// (OP_COMPRESSED specification).
func neverCompressed(name string) bool {
	switch name {
	case "hello", "isMaster", "ismaster", "saslStart", "saslContinue", "getnonce",
		"authenticate", "createUser", "updateUser", "copydbSaslStart", "copydbgetnonce", "copydb":
		return true
	}
	return false
}

// deadlineWriter gives replies the same time bound as requests, so a
// client that stops reading cannot pin the connection goroutine forever.
// The deadline is refreshed at most every half timeout to keep timers off
// the hot path.
type deadlineWriter struct{ c *Conn }

func (w deadlineWriter) Write(p []byte) (int, error) {
	c := w.c
	timeout := c.srv.cfg.MessageTimeout
	// time.Until reads only the monotonic clock (writeDeadline has its
	// reading): the wall clock is read only to move the deadline.
	if time.Until(c.writeDeadline) < timeout/2 {
		c.writeDeadline = time.Now().Add(timeout)
		if err := c.nc.SetWriteDeadline(c.writeDeadline); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	if c.tc != nil {
		n, err = c.tc.Write(p)
	} else {
		n, err = c.nc.Write(p)
	}
	c.srv.traffic.out.Add(int64(n))
	return n, err
}
