package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wire"
)

// fakeHandler answers the handshake like a standalone mongod and a few
// test commands; it records every command it sees.
type fakeHandler struct {
	mu      sync.Mutex
	seen    []Command
	release chan struct{} // "sleep" waits on it
	started chan struct{} // "sleep" and "block" signal here
	ended   chan error    // "block" sends its context's cause when it ends
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{release: make(chan struct{}), started: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func (h *fakeHandler) commands() []Command {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Command(nil), h.seen...)
}

func (h *fakeHandler) named(name string) []Command {
	var out []Command
	for _, c := range h.commands() {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func (h *fakeHandler) Handle(ctx context.Context, c *Conn, cmd *Command) bson.D {
	h.mu.Lock()
	h.seen = append(h.seen, *cmd)
	h.mu.Unlock()
	switch cmd.Name {
	case "isMaster", "ismaster", "hello":
		return hello(c, cmd)
	case "sleep":
		h.started <- struct{}{}
		<-h.release
	case "block":
		h.started <- struct{}{}
		<-ctx.Done()
		h.ended <- context.Cause(ctx)
		return mongoerr.Reply(mongoerr.New(mongoerr.Interrupted, "interrupted at shutdown"))
	case "nap": // sleeps the body's microseconds
		us, _ := cmd.Body[0].Value.(int64)
		time.Sleep(time.Duration(us) * time.Microsecond)
	case "panic":
		panic("boom")
	case "nilReply":
		return nil
	case "badReply":
		return bson.D{{Key: "bad", Value: make(chan int)}}
	case "setValue":
		c.SetValue("k", cmd.Body[0].Value)
	case "whoami":
		return bson.D{{Key: "id", Value: c.ID()}, {Key: "v", Value: c.Value("k")}, {Key: "remote", Value: c.RemoteAddr()}, {Key: "ok", Value: 1.0}}
	}
	return bson.D{{Key: "ok", Value: 1.0}}
}

func hello(c *Conn, cmd *Command) bson.D {
	key := "ismaster"
	if cmd.Name == "hello" {
		key = "isWritablePrimary"
	}
	var r bson.D
	if _, ok := bsonutil.Field(cmd.Body, "helloOk"); ok {
		r = append(r, bson.E{Key: "helloOk", Value: true})
	}
	r = append(r,
		bson.E{Key: key, Value: true},
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(wire.MaxWriteBatchSize)},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
		bson.E{Key: "connectionId", Value: c.ID()},
		bson.E{Key: "minWireVersion", Value: int32(0)},
		bson.E{Key: "maxWireVersion", Value: int32(25)},
		bson.E{Key: "readOnly", Value: false},
	)
	if v, ok := bsonutil.Field(cmd.Body, "compression"); ok {
		var names []string
		for _, n := range v.(bson.A) {
			names = append(names, n.(string))
		}
		if kept := c.NegotiateCompression(names); len(kept) > 0 {
			r = append(r, bson.E{Key: "compression", Value: kept})
		}
	}
	return append(r, bson.E{Key: "ok", Value: 1.0})
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startServer runs a Server on a free port and shuts it down at test end.
func startServer(t *testing.T, cfg Config, h Handler) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	s := New(cfg, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s
}

// rawClient speaks the wire protocol byte by byte.
type rawClient struct {
	t     *testing.T
	nc    net.Conn
	codec *wire.Codec
	id    int32
}

func dial(t *testing.T, s *Server) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, codec: wire.NewCodec(wire.CompressorSnappy, wire.CompressorZlib, wire.CompressorZstd)}
}

func (c *rawClient) nextID() int32 {
	c.id++
	return c.id
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// msg builds an OP_MSG request.
func (c *rawClient) msg(flags uint32, body bson.D, seqs ...wire.Sequence) []byte {
	return wire.AppendMsg(nil, c.nextID(), 0, flags, marshal(c.t, body), seqs...)
}

func (c *rawClient) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// reply is a decoded reply frame.
type reply struct {
	header     wire.Header // as on the wire
	opCode     wire.OpCode // effective
	compressor string      // "" if not compressed
	doc        bson.D
}

// readFrame reads one raw message, or returns the read error.
func (c *rawClient) readFrame(timeout time.Duration) ([]byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	hdr := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(c.nc, hdr); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(hdr))
	if n < wire.HeaderSize || n > wire.MaxMessageSize {
		c.t.Fatalf("reply length %d", n)
	}
	frame := make([]byte, n)
	copy(frame, hdr)
	if _, err := io.ReadFull(c.nc, frame[wire.HeaderSize:]); err != nil {
		return nil, err
	}
	return frame, nil
}

func (c *rawClient) read() reply {
	c.t.Helper()
	frame, err := c.readFrame(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return c.decode(frame)
}

func (c *rawClient) decode(frame []byte) reply {
	c.t.Helper()
	op := wire.OpCode(binary.LittleEndian.Uint32(frame[12:]))
	if op == wire.OpReply {
		return c.decodeOpReply(frame)
	}
	m, err := wire.ReadMessage(bytes.NewReader(frame), c.codec)
	if err != nil {
		c.t.Fatalf("bad reply frame: %v", err)
	}
	if m.Flags != 0 || len(m.Sequences) != 0 {
		c.t.Fatalf("reply flags %b, %d sequences", m.Flags, len(m.Sequences))
	}
	r := reply{header: m.Header, opCode: m.OpCode}
	if m.Compressed {
		r.compressor = m.Compressor.String()
	}
	if r.doc, err = m.Command(); err != nil {
		c.t.Fatal(err)
	}
	return r
}

func (c *rawClient) decodeOpReply(frame []byte) reply {
	c.t.Helper()
	p := frame[wire.HeaderSize:]
	if len(p) < 20 {
		c.t.Fatalf("OP_REPLY of %d bytes", len(frame))
	}
	flags, cursor := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint64(p[4:])
	from, n := binary.LittleEndian.Uint32(p[12:]), binary.LittleEndian.Uint32(p[16:])
	if flags != 0 || cursor != 0 || from != 0 || n != 1 {
		c.t.Fatalf("OP_REPLY flags=%d cursor=%d from=%d n=%d", flags, cursor, from, n)
	}
	var doc bson.D
	if err := bson.Unmarshal(p[20:], &doc); err != nil {
		c.t.Fatalf("OP_REPLY document: %v", err)
	}
	h := wire.Header{
		MessageLength: int32(binary.LittleEndian.Uint32(frame)),
		RequestID:     int32(binary.LittleEndian.Uint32(frame[4:])),
		ResponseTo:    int32(binary.LittleEndian.Uint32(frame[8:])),
		OpCode:        wire.OpReply,
	}
	return reply{header: h, opCode: wire.OpReply, doc: doc}
}

// roundTrip sends a request and returns the reply, checking responseTo.
func (c *rawClient) roundTrip(b []byte) reply {
	c.t.Helper()
	c.send(b)
	r := c.read()
	if want := int32(binary.LittleEndian.Uint32(b[4:])); r.header.ResponseTo != want {
		c.t.Fatalf("reply responseTo %d, want %d", r.header.ResponseTo, want)
	}
	return r
}

// run sends body as an OP_MSG and returns the reply document.
func (c *rawClient) run(body bson.D) bson.D {
	c.t.Helper()
	return c.roundTrip(c.msg(0, body)).doc
}

// expectClosed asserts that the server closes the connection (no more
// replies, EOF or reset) rather than leaving it hanging.
func (c *rawClient) expectClosed(timeout time.Duration) {
	c.t.Helper()
	for {
		frame, err := c.readFrame(timeout)
		if err == nil {
			c.t.Logf("reply before close: %v", c.decode(frame).doc)
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("connection still open")
		}
		return
	}
}

func field(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}

// wantError asserts an {ok: 0, code} reply.
func wantError(t *testing.T, d bson.D, code mongoerr.Code) {
	t.Helper()
	if field(d, "ok") != 0.0 || field(d, "code") != int32(code) {
		t.Fatalf("got %v, want error code %d", d, code)
	}
}

func wantOK(t *testing.T, d bson.D) {
	t.Helper()
	if field(d, "ok") != 1.0 {
		t.Fatalf("got %v, want ok: 1", d)
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ping() bson.D {
	return bson.D{{Key: "ping", Value: int32(1)}, {Key: "$db", Value: "admin"}}
}
