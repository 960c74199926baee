package server

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wire"
)

func TestOpQueryHandshake(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	q := bson.D{{Key: "isMaster", Value: int32(1)}, {Key: "helloOk", Value: true}}
	r := c.roundTrip(wire.AppendQuery(nil, c.nextID(), "admin.$cmd", marshal(t, q)))
	if r.opCode != wire.OpReply || field(r.doc, "ismaster") != true || field(r.doc, "helloOk") != true {
		t.Fatalf("handshake reply %v (%v)", r.doc, r.opCode)
	}
	got := h.named("isMaster")
	if len(got) != 1 || !got[0].Legacy || got[0].DB != "admin" || got[0].MoreToCome {
		t.Fatalf("handler saw %+v", got)
	}
	want := append(q, bson.E{Key: "$db", Value: "admin"})
	if !reflect.DeepEqual(got[0].Body, want) {
		t.Fatalf("legacy body %v, want %v", got[0].Body, want)
	}
	// The connection goes on with OP_MSG.
	wantOK(t, c.run(ping()))
}

func TestOpQueryWrappedReadPreference(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	rp := bson.D{{Key: "mode", Value: "secondaryPreferred"}}
	q := bson.D{{Key: "$query", Value: bson.D{{Key: "ismaster", Value: int32(1)}}}, {Key: "$readPreference", Value: rp}}
	r := c.roundTrip(wire.AppendQuery(nil, c.nextID(), "test.$cmd", marshal(t, q)))
	if field(r.doc, "ismaster") != true {
		t.Fatalf("reply %v", r.doc)
	}
	got := h.named("ismaster")
	if len(got) != 1 || got[0].DB != "test" || !reflect.DeepEqual(field(got[0].Body, "$readPreference"), rp) {
		t.Fatalf("handler saw %+v", got)
	}
}

func TestOpQueryRejected(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	for _, tc := range []struct{ ns, cmd, named string }{
		{"admin.$cmd", "hello", "hello"},
		{"admin.$cmd", "ping", "ping"},
		{"admin.$cmd", "insert", "insert"},
		{"test.coll", "isMaster", "find"}, // a real query, not a command
	} {
		q := marshal(t, bson.D{{Key: tc.cmd, Value: int32(1)}})
		r := c.roundTrip(wire.AppendQuery(nil, c.nextID(), tc.ns, q))
		if r.opCode != wire.OpReply {
			t.Fatalf("%s: reply opcode %v", tc.cmd, r.opCode)
		}
		wantError(t, r.doc, mongoerr.UnsupportedOpQueryCommand)
		want := "Unsupported OP_QUERY command: " + tc.named + ". The client driver may require an upgrade. " +
			"For more details see https://dochub.mongodb.org/core/legacy-opcode-removal"
		if field(r.doc, "errmsg") != want || field(r.doc, "codeName") != "UnsupportedOpQueryCommand" {
			t.Fatalf("%s: reply %v", tc.cmd, r.doc)
		}
	}
	if seen := h.commands(); len(seen) != 0 {
		t.Fatalf("handler saw forbidden legacy commands: %+v", seen)
	}
	wantOK(t, c.run(ping()))
}

func TestOpMsgCommandWithSequence(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	d1 := marshal(t, bson.D{{Key: "_id", Value: int32(1)}})
	d2 := marshal(t, bson.D{{Key: "_id", Value: int32(2)}})
	req := c.msg(0, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}},
		wire.Sequence{Identifier: "documents", Docs: []bson.Raw{d1, d2}})
	r := c.roundTrip(req)
	wantOK(t, r.doc)
	if r.opCode != wire.OpMsg || r.compressor != "" {
		t.Fatalf("reply %v compressed %q", r.opCode, r.compressor)
	}
	got := h.named("insert")
	if len(got) != 1 {
		t.Fatalf("handler saw %+v", h.commands())
	}
	cmd := got[0]
	want := bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"},
		{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: int32(1)}}, bson.D{{Key: "_id", Value: int32(2)}}}}}
	if cmd.DB != "test" || cmd.Legacy || cmd.MoreToCome || cmd.Size != len(req) || !reflect.DeepEqual(cmd.Body, want) {
		t.Fatalf("command %+v", cmd)
	}
}

func TestOpMsgDBErrors(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	wantError(t, c.run(bson.D{{Key: "ping", Value: 1}}), 40571)
	wantError(t, c.run(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: int32(3)}}), mongoerr.TypeMismatch)
	if len(h.commands()) != 0 {
		t.Fatalf("handler saw %+v", h.commands())
	}
	wantOK(t, c.run(ping()))
}

func TestMoreToCome(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	c.send(c.msg(wire.FlagMoreToCome, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}}))
	// Errors are swallowed too: no $db, no reply.
	c.send(c.msg(wire.FlagMoreToCome, bson.D{{Key: "insert", Value: "c"}}))
	// A malformed-but-framed moreToCome message gets no reply either.
	c.send(wire.AppendMsg(nil, c.nextID(), 0, wire.FlagMoreToCome, []byte{12, 0, 0, 0, 0x77, 'a', 0, 1, 2, 3, 4, 0}))
	// The next reply read belongs to the ping.
	r := c.roundTrip(c.msg(0, ping()))
	wantOK(t, r.doc)
	got := h.named("insert")
	if len(got) != 1 || !got[0].MoreToCome {
		t.Fatalf("handler saw %+v", h.commands())
	}
}

func TestHandlerFailuresBecomeErrors(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	c := dial(t, s)
	for _, name := range []string{"panic", "nilReply", "badReply"} {
		d := c.run(bson.D{{Key: name, Value: 1}, {Key: "$db", Value: "admin"}})
		wantError(t, d, mongoerr.InternalError)
		if field(d, "codeName") != "InternalError" {
			t.Fatalf("%s: %v", name, d)
		}
	}
	wantOK(t, c.run(ping()))
}

// malformedCase is raw input and what the server must do with it: answer
// with an error code (0: no reply) and/or close the connection.
type malformedCase struct {
	name   string
	in     []byte
	code   mongoerr.Code
	closes bool
}

func malformedCases(t *testing.T, c *rawClient) []malformedCase {
	body := marshal(t, ping())
	doc := marshal(t, bson.D{{Key: "a", Value: 1}})
	withLen := func(b []byte, n int32) []byte {
		binary.LittleEndian.PutUint32(b, uint32(n))
		return b
	}
	// raw builds an OP_MSG from raw section bytes.
	raw := func(flags uint32, sections ...[]byte) []byte {
		b := make([]byte, wire.HeaderSize)
		b = binary.LittleEndian.AppendUint32(b, flags)
		for _, s := range sections {
			b = append(b, s...)
		}
		binary.LittleEndian.PutUint32(b, uint32(len(b)))
		binary.LittleEndian.PutUint32(b[4:], uint32(c.nextID()))
		binary.LittleEndian.PutUint32(b[12:], uint32(wire.OpMsg))
		return b
	}
	kind0 := append([]byte{0}, body...)
	seq := wire.AppendMsg(nil, 0, 0, 0, body, wire.Sequence{Identifier: "documents", Docs: []bson.Raw{doc}})
	kind1 := seq[wire.HeaderSize+4+len(kind0):]
	truncated := append([]byte{}, kind1...)
	binary.LittleEndian.PutUint32(truncated[1:], uint32(len(kind1)+40))
	badSum := wire.AppendMsg(nil, c.nextID(), 0, wire.FlagChecksumPresent, body)
	badSum[len(badSum)-2] ^= 0xff
	goodSum := wire.AppendMsg(nil, c.nextID(), 0, wire.FlagChecksumPresent, body)
	if crc32.Checksum(goodSum[:len(goodSum)-4], crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(goodSum[len(goodSum)-4:]) {
		t.Fatal("test checksum helper broken")
	}
	compressed := func(id wire.CompressorID, payload []byte) []byte {
		b := make([]byte, wire.HeaderSize+9)
		binary.LittleEndian.PutUint32(b[wire.HeaderSize:], uint32(wire.OpMsg))
		binary.LittleEndian.PutUint32(b[wire.HeaderSize+4:], 100)
		b[wire.HeaderSize+8] = byte(id)
		b = append(b, payload...)
		binary.LittleEndian.PutUint32(b, uint32(len(b)))
		binary.LittleEndian.PutUint32(b[4:], uint32(c.nextID()))
		binary.LittleEndian.PutUint32(b[12:], uint32(wire.OpCompressed))
		return b
	}
	unknownOp := raw(0, kind0)
	binary.LittleEndian.PutUint32(unknownOp[12:], 2002) // OP_INSERT, removed
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", 8))
	return []malformedCase{
		{"length below header", withLen(raw(0, kind0), 8), 0, true},
		{"negative length", withLen(raw(0, kind0), -1), 0, true},
		{"oversized length", withLen(raw(0, kind0), wire.MaxMessageSize+1), 0, true},
		{"unsupported opcode", unknownOp, 0, true},
		{"bad checksum", badSum, 288, true},
		{"bad section kind", raw(0, kind0, []byte{5, 1, 2, 3}), 40432, true},
		{"truncated kind-1", raw(0, kind0, truncated), mongoerr.ProtocolError, true},
		{"kind-0 overruns message", raw(0, kind0[:len(kind0)-3]), mongoerr.ProtocolError, true},
		{"unknown required flag", raw(1<<3, kind0), mongoerr.IllegalOpMsgFlag, true},
		{"snappy garbage", compressed(wire.CompressorSnappy, garbage), mongoerr.ProtocolError, true},
		{"zlib garbage", compressed(wire.CompressorZlib, garbage), mongoerr.ProtocolError, true},
		{"zstd garbage", compressed(wire.CompressorZstd, garbage), mongoerr.ProtocolError, true},
		{"unknown compressor", compressed(7, garbage), mongoerr.ProtocolError, true},
		{"duplicate identifier", raw(0, kind0, kind1, kind1), 40431, false},
		{"two kind-0", raw(0, kind0, kind0), 40430, false},
		{"no kind-0", raw(0, kind1), 40587, false},
		{"invalid BSON", raw(0, []byte{0, 12, 0, 0, 0, 0x77, 'a', 0, 1, 2, 3, 4, 0}), mongoerr.InvalidBSON, false},
		{"body field repeats sequence", raw(0, append([]byte{0}, marshal(t, bson.D{{Key: "documents", Value: 1}, {Key: "$db", Value: "a"}})...), kind1), 40433, false},
		{"valid checksum is fine", goodSum, -1, false},
	}
}

func TestMalformedMessages(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	for _, tc := range malformedCases(t, dial(t, s)) {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			c.send(tc.in)
			switch {
			case tc.code == -1:
				wantOK(t, c.read().doc)
			case tc.code != 0:
				r := c.read()
				wantError(t, r.doc, tc.code)
				if want := int32(binary.LittleEndian.Uint32(tc.in[4:])); r.header.ResponseTo != want {
					t.Fatalf("error reply responseTo %d, want %d", r.header.ResponseTo, want)
				}
			}
			if tc.closes {
				c.expectClosed(5 * time.Second)
			} else {
				wantOK(t, c.run(ping())) // same connection goes on
			}
			wantOK(t, dial(t, s).run(ping())) // and the server is fine
		})
	}
	if n := len(h.named("ping")); n == 0 {
		t.Fatal("no ping reached the handler")
	}
	for _, cmd := range h.commands() {
		if cmd.Name != "ping" {
			t.Fatalf("malformed message reached the handler: %+v", cmd)
		}
	}
}

// A client that sends half a message is cut off after MessageTimeout; an
// idle client is not.
func TestMessageTimeout(t *testing.T) {
	s := startServer(t, Config{MessageTimeout: 200 * time.Millisecond}, newFakeHandler())
	idle := dial(t, s)
	half := dial(t, s)
	req := half.msg(0, ping())
	half.send(req[:len(req)/2])
	start := time.Now()
	half.expectClosed(5 * time.Second)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the timeout", d)
	}
	time.Sleep(300 * time.Millisecond)
	wantOK(t, idle.run(ping()))
	// A message that arrives slowly but within the timeout is fine.
	slow := dial(t, s)
	req = slow.msg(0, ping())
	slow.send(req[:5])
	time.Sleep(50 * time.Millisecond)
	slow.send(req[5:])
	wantOK(t, slow.read().doc)
}

func TestMaxConns(t *testing.T) {
	s := startServer(t, Config{MaxConns: 2}, newFakeHandler())
	a, b := dial(t, s), dial(t, s)
	wantOK(t, a.run(ping()))
	wantOK(t, b.run(ping()))
	over := dial(t, s)
	over.expectClosed(5 * time.Second)
	st := s.Stats()
	if st.Rejected != 1 || st.Current != 2 || st.Available != 0 || st.TotalCreated != 2 {
		t.Fatalf("stats %+v", st)
	}
	a.nc.Close()
	eventually(t, "a connection slot to free up", func() bool { return s.Stats().Current == 1 })
	wantOK(t, dial(t, s).run(ping()))
}

func TestShutdownWaitsForInFlightCommand(t *testing.T) {
	h := newFakeHandler()
	s := New(Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()

	busy, idle := dial(t, s), dial(t, s)
	wantOK(t, idle.run(ping()))
	busy.send(busy.msg(0, bson.D{{Key: "sleep", Value: 1}, {Key: "$db", Value: "admin"}}))
	<-h.started
	eventually(t, "one active connection", func() bool {
		st := s.Stats()
		return st.Active == 1 && st.Current == 2
	})

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	idle.expectClosed(5 * time.Second)
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if _, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		t.Fatal("new connection accepted during shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a command was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(h.release)
	wantOK(t, busy.read().doc) // the in-flight command still gets its reply
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	busy.expectClosed(5 * time.Second)
	if st := s.Stats(); st.Current != 0 || st.Active != 0 {
		t.Fatalf("stats after shutdown %+v", st)
	}
	if err := s.Listen(); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Listen after Shutdown: %v", err)
	}
}

// TestShutdownInterruptsRunningCommands: Shutdown ends the context of
// running commands at once (cause ErrShuttingDown), so one that honours it
// answers and Shutdown finishes without waiting for its deadline.
func TestShutdownInterruptsRunningCommands(t *testing.T) {
	s, _, c := runningCommand(t, "block")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
	if code := field(c.read().doc, "code"); code != int32(mongoerr.Interrupted) {
		t.Fatalf("the running command answered code %v", code)
	}
	c.expectClosed(5 * time.Second)
}

// runningCommand serves on a fresh server and starts the fake handler's
// command name on a connection, returning once it runs.
func runningCommand(t *testing.T, name string) (*Server, *fakeHandler, *rawClient) {
	h := newFakeHandler()
	s := New(Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, h)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	c := dial(t, s)
	c.send(c.msg(0, bson.D{{Key: name, Value: 1}, {Key: "$db", Value: "admin"}}))
	<-h.started
	return s, h, c
}

// TestShutdownDeadlineForcesClose: a command that ignores its context is
// cut off when Shutdown's deadline passes.
func TestShutdownDeadlineForcesClose(t *testing.T) {
	s, h, c := runningCommand(t, "sleep")
	defer close(h.release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want deadline exceeded", err)
	}
	c.expectClosed(5 * time.Second)
}

func TestConnIdentityAndValues(t *testing.T) {
	s := startServer(t, Config{}, newFakeHandler())
	a, b := dial(t, s), dial(t, s)
	whoami := bson.D{{Key: "whoami", Value: 1}, {Key: "$db", Value: "admin"}}
	ra := a.run(whoami)
	rb := b.run(whoami)
	ida, idb := field(ra, "id").(int64), field(rb, "id").(int64)
	if ida < 1 || idb <= ida {
		t.Fatalf("connection ids %d then %d", ida, idb)
	}
	if field(ra, "remote") != a.nc.LocalAddr().String() {
		t.Fatalf("remote %v, want %v", field(ra, "remote"), a.nc.LocalAddr())
	}
	wantOK(t, a.run(bson.D{{Key: "setValue", Value: "alice"}, {Key: "$db", Value: "admin"}}))
	if v := field(a.run(whoami), "v"); v != "alice" {
		t.Fatalf("value on a: %v", v)
	}
	if v := field(b.run(whoami), "v"); v != nil {
		t.Fatalf("value leaked to b: %v", v)
	}
	// A connection stops counting as active just after its reply is sent.
	eventually(t, "stats to settle", func() bool {
		st := s.Stats()
		return st.Current == 2 && st.TotalCreated == 2 && st.Active == 0
	})
}

func TestServeWithoutListen(t *testing.T) {
	s := New(Config{Logger: quietLogger()}, newFakeHandler())
	if err := s.Serve(); err == nil {
		t.Fatal("Serve without Listen succeeded")
	}
	if s.Addr() != nil {
		t.Fatal("Addr before Listen")
	}
}
