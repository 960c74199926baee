package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/wire"
)

// rawOutcome is what a raw message got: the reply's code (0 for ok:1, -1
// for no reply) and whether the server closed the connection after.
type rawOutcome struct {
	code   int32
	closed bool
}

func (o rawOutcome) String() string {
	reply := "no reply"
	switch {
	case o.code == 0:
		reply = "ok:1"
	case o.code > 0:
		reply = fmt.Sprintf("error %d", o.code)
	}
	if o.closed {
		return reply + ", connection closed"
	}
	return reply + ", connection open"
}

// rawCase is one malformed (or merely unusual) message sent on a raw TCP
// connection, with the outcome MongoDB gives it.
type rawCase struct {
	name string
	msg  func(t *testing.T) []byte
	want rawOutcome
}

// The bad-input table for raw messages. Framing that cannot be trusted
// closes the connection (after an error reply when the whole message was
// read, as MongoDB does); a problem inside well-framed documents gets an
// error reply and the connection stays usable.
var rawCases = []rawCase{
	{"message length 48 000 001 (over maxMessageSizeBytes)", func(t *testing.T) []byte {
		return header(wire.MaxMessageSize+1, wire.OpMsg)
	}, rawOutcome{-1, true}},
	{"message length 10 (below the header)", func(t *testing.T) []byte {
		return header(10, wire.OpMsg)
	}, rawOutcome{-1, true}},
	{"unknown opcode 1234", func(t *testing.T) []byte {
		return append(header(20, 1234), 0, 0, 0, 0)
	}, rawOutcome{-1, true}},
	{"unknown section kind 7", func(t *testing.T) []byte {
		return rawOpMsg(0, append([]byte{7}, docBytes(t, pingCmd())...))
	}, rawOutcome{40432, true}},
	{"kind-1 section length past the end", func(t *testing.T) []byte {
		return rawOpMsg(0, kind0raw(docBytes(t, pingCmd())), []byte{1, 0xff, 0, 0, 0, 'd', 0})
	}, rawOutcome{17, true}},
	{"body document length larger than the message", func(t *testing.T) []byte {
		doc := docBytes(t, pingCmd())
		binary.LittleEndian.PutUint32(doc, uint32(len(doc)+100))
		return rawOpMsg(0, kind0raw(doc))
	}, rawOutcome{17, true}},
	{"checksum flag with a wrong CRC-32C", func(t *testing.T) []byte {
		m := wire.AppendMsg(nil, 1, 0, wire.FlagChecksumPresent, docBytes(t, pingCmd()))
		m[len(m)-1] ^= 0xff
		return m
	}, rawOutcome{288, true}},
	{"checksum flag with a right CRC-32C", func(t *testing.T) []byte {
		return wire.AppendMsg(nil, 1, 0, wire.FlagChecksumPresent, docBytes(t, pingCmd()))
	}, rawOutcome{0, false}},
	{"unknown required flag bit 5", func(t *testing.T) []byte {
		return wire.AppendMsg(nil, 1, 0, 1<<5, docBytes(t, pingCmd()))
	}, rawOutcome{223, true}},
	{"malformed BSON: string without its NUL", func(t *testing.T) []byte {
		return rawOpMsg(0, kind0raw(badStringDoc()))
	}, rawOutcome{22, false}},
	{"malformed BSON: boolean byte 2", func(t *testing.T) []byte {
		doc := docBytes(t, bson.D{{Key: "ping", Value: 1}, {Key: "b", Value: true}, {Key: "$db", Value: "admin"}})
		doc[bytes.Index(doc, []byte("b\x00\x01"))+2] = 2
		return rawOpMsg(0, kind0raw(doc))
	}, rawOutcome{22, false}},
	{"two body sections", func(t *testing.T) []byte {
		return rawOpMsg(0, kind0raw(docBytes(t, pingCmd())), kind0raw(docBytes(t, pingCmd())))
	}, rawOutcome{40430, false}},
	{"no body section", func(t *testing.T) []byte {
		return rawOpMsg(0, kind1raw("documents", docBytes(t, bson.D{{Key: "a", Value: 1}})))
	}, rawOutcome{40587, false}},
	{"nesting 210 levels (deeper than maxBSONDepth 200)", func(t *testing.T) []byte {
		return insertRaw(t, nested(210))
	}, rawOutcome{15, false}},
	{"nesting 100 000 levels", func(t *testing.T) []byte {
		return insertRaw(t, nested(100_000))
	}, rawOutcome{15, false}},
	{"nesting 150 levels (allowed in a command)", func(t *testing.T) []byte {
		return insertRaw(t, nested(150))
	}, rawOutcome{0, false}},
	{"document of 16 MiB + 1 KiB in an insert", func(t *testing.T) []byte {
		return insertRaw(t, docBytes(t, bson.D{{Key: "pad", Value: strings.Repeat("x", 16<<20+1024)}}))
	}, rawOutcome{2, false}},
	{"invalid UTF-8 in a string value", func(t *testing.T) []byte {
		return insertRaw(t, docBytes(t, bson.D{{Key: "_id", Value: "utf8"}, {Key: "s", Value: "\xff\xfe\xc3"}}))
	}, rawOutcome{0, false}},
	{"unknown command", func(t *testing.T) []byte {
		return rawOpMsg(0, kind0raw(docBytes(t, bson.D{{Key: "noSuchCommand", Value: 1}, {Key: "$db", Value: "admin"}})))
	}, rawOutcome{59, false}},
	{"command without $db", func(t *testing.T) []byte {
		return rawOpMsg(0, kind0raw(docBytes(t, bson.D{{Key: "ping", Value: 1}})))
	}, rawOutcome{40571, false}},
}

func pingCmd() bson.D { return bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}} }

func header(length int32, op wire.OpCode) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b[0:], uint32(length))
	binary.LittleEndian.PutUint32(b[4:], 1)
	binary.LittleEndian.PutUint32(b[12:], uint32(op))
	return b
}

// rawOpMsg frames sections (each with its kind byte) as an OP_MSG.
func rawOpMsg(flags uint32, sections ...[]byte) []byte {
	body := binary.LittleEndian.AppendUint32(nil, flags)
	for _, s := range sections {
		body = append(body, s...)
	}
	return append(header(int32(16+len(body)), wire.OpMsg), body...)
}

func kind0raw(doc []byte) []byte { return append([]byte{0}, doc...) }

func kind1raw(id string, docs ...[]byte) []byte {
	payload := append([]byte(id), 0)
	for _, d := range docs {
		payload = append(payload, d...)
	}
	return append(binary.LittleEndian.AppendUint32([]byte{1}, uint32(4+len(payload))), payload...)
}

func docBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// insertRaw is an insert into test.bad carrying doc in a kind-1 sequence.
func insertRaw(t *testing.T, doc []byte) []byte {
	body := docBytes(t, bson.D{{Key: "insert", Value: "bad"}, {Key: "$db", Value: "test"}})
	return rawOpMsg(0, kind0raw(body), kind1raw("documents", doc))
}

// badStringDoc is {ping: 1, s: "ab"} whose string lacks its terminator.
func badStringDoc() []byte {
	var d []byte
	d = append(d, 0, 0, 0, 0)
	d = append(d, 0x10)
	d = append(d, "ping\x00"...)
	d = binary.LittleEndian.AppendUint32(d, 1)
	d = append(d, 0x02)
	d = append(d, "s\x00"...)
	d = binary.LittleEndian.AppendUint32(d, 3)
	d = append(d, 'a', 'b', 'c') // should end in 0
	d = append(d, 0)
	binary.LittleEndian.PutUint32(d, uint32(len(d)))
	return d
}

// nested returns {_id: "deep<depth>", a: {a: {... {}}}} with depth levels
// of documents in total, built in linear time so that huge depths are
// cheap to make.
func nested(depth int) []byte {
	id := fmt.Sprintf("deep%d", depth)
	var d []byte
	d = append(d, 0, 0, 0, 0, 0x02)
	d = append(d, "_id\x00"...)
	d = binary.LittleEndian.AppendUint32(d, uint32(len(id)+1))
	d = append(d, id...)
	d = append(d, 0, 0x03, 'a', 0)
	// Documents 1..n below the top; n is the empty innermost one, and each
	// outer one is 8 bytes larger (length, type, "a", NUL, closing NUL).
	n := depth - 1
	for k := 1; k < n; k++ {
		d = binary.LittleEndian.AppendUint32(d, uint32(5+8*(n-k)))
		d = append(d, 0x03, 'a', 0)
	}
	d = append(d, 5, 0, 0, 0, 0)
	d = append(d, make([]byte, n)...) // closes documents n-1..1 and the top
	binary.LittleEndian.PutUint32(d, uint32(len(d)))
	return d
}

// sendRaw writes msg on a fresh connection and reports the outcome; if
// the connection stays open it must still answer a ping.
func sendRaw(t *testing.T, addr string, msg []byte) rawOutcome {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(msg); err != nil && !isReset(err) {
		t.Fatalf("write: %v", err)
	}
	out := rawOutcome{code: -1}
	reply, err := readRawReply(nc, 5*time.Second)
	switch {
	case err == nil:
		out.code = replyCode(t, reply)
	case isClosed(err):
		out.closed = true
		return out
	default:
		t.Fatalf("read reply: %v", err)
	}
	if _, err := readRawReply(nc, 300*time.Millisecond); isClosed(err) {
		out.closed = true
		return out
	}
	if _, err := nc.Write(wire.AppendMsg(nil, 2, 0, 0, docBytes(t, pingCmd()))); err != nil {
		t.Fatalf("ping after reply: %v", err)
	}
	reply, err = readRawReply(nc, 5*time.Second)
	if err != nil || replyCode(t, reply) != 0 {
		t.Fatalf("connection left open but ping fails: %v", err)
	}
	return out
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// readRawReply reads one OP_MSG reply and returns its body document.
func readRawReply(nc net.Conn, wait time.Duration) (bson.Raw, error) {
	_ = nc.SetReadDeadline(time.Now().Add(wait))
	var h [16]byte
	if _, err := io.ReadFull(nc, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(h[:]))
	if n < 21 || n > wire.MaxMessageSize {
		return nil, fmt.Errorf("reply length %d", n)
	}
	body := make([]byte, n-16)
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, err
	}
	if op := wire.OpCode(binary.LittleEndian.Uint32(h[12:])); op != wire.OpMsg {
		return nil, fmt.Errorf("reply opcode %v", op)
	}
	return bson.Raw(body[5:]), nil
}

// replyCode returns 0 for a clean ok:1, else the command error's code or
// the first write error's.
func replyCode(t *testing.T, reply bson.Raw) int32 {
	t.Helper()
	var r struct {
		OK          float64 `bson:"ok"`
		Code        int32   `bson:"code"`
		WriteErrors []struct {
			Code int32 `bson:"code"`
		} `bson:"writeErrors"`
	}
	if err := bson.Unmarshal(reply, &r); err != nil {
		t.Fatalf("decode reply: %v", err)
	}
	switch {
	case r.OK != 1:
		return r.Code
	case len(r.WriteErrors) > 0:
		return r.WriteErrors[0].Code
	}
	return 0
}

func TestReliabilityBadInputRaw(t *testing.T) {
	s := startServer(t, app.Config{})
	addr := s.app.Addr().String()
	bystander := connect(t, s) // a connection that must not notice
	for _, tc := range rawCases {
		start := time.Now()
		got := sendRaw(t, addr, tc.msg(t))
		t.Logf("%-55s → %v (%v)", tc.name, got, time.Since(start).Round(time.Millisecond))
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if err := bystander.Database("admin").RunCommand(ctxT(t), pingCmd()[:1]).Err(); err != nil {
			t.Fatalf("after %s: another connection fails: %v", tc.name, err)
		}
		pingFresh(t, addr)
	}
	checkUTF8RoundTrip(t, bystander)
}

// checkUTF8RoundTrip: MongoDB stores strings' bytes as given, invalid
// UTF-8 included, and returns them unchanged; so does Mayfly.
func checkUTF8RoundTrip(t *testing.T, c *mongo.Client) {
	t.Helper()
	raw, err := c.Database("test").Collection("bad").FindOne(ctxT(t), bson.D{{Key: "_id", Value: "utf8"}}).Raw()
	if err != nil {
		t.Fatalf("the invalid UTF-8 document: %v", err)
	}
	v, err := raw.LookupErr("s")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := v.StringValueOK(); !ok || s != "\xff\xfe\xc3" {
		t.Fatalf("invalid UTF-8 came back as %q", v.Value)
	}
}

// driverCase is a command sent through the Go driver and the code it gets.
type driverCase struct {
	name string
	cmd  bson.D
	code int32
	msg  string // part of MongoDB's message, if it is fixed
}

var driverCases = []driverCase{
	{"unknown command", bson.D{{Key: "frobnicate", Value: 1}}, 59, "no such command: 'frobnicate'"},
	{"unknown field in find", bson.D{{Key: "find", Value: "c"}, {Key: "bogus", Value: 1}}, 40415, "unknown field"},
	{"unknown field in insert", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "bogus", Value: 1}}, 40415, "unknown field"},
	{"wrong type: find filter a string", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: "x"}}, 14, ""},
	{"wrong type: insert documents not an array", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: 1}}, 14, ""},
	{"wrong type: limit a string", bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: "1"}}, 14, ""},
	{"expireAfterSeconds NaN", ttlIndexCmd(math.NaN()), 67, "must not be NaN"},
	{"expireAfterSeconds -1", ttlIndexCmd(-1), 67, "cannot be less than 0"},
	{"expireAfterSeconds 2^31", ttlIndexCmd(int64(1) << 31), 67, "32-bit integer"},
	{"expireAfterSeconds \"1\"", ttlIndexCmd("1"), 67, "must be numeric"},
	{"expireAfterSeconds null", ttlIndexCmd(nil), 67, "must be numeric"},
	{"maxTimeMS -1", bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: -1}}, 2, "out of range"},
}

func ttlIndexCmd(secs any) bson.D {
	return bson.D{{Key: "createIndexes", Value: "ttl"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: secs}},
	}}}
}

func TestReliabilityBadInputDriver(t *testing.T) {
	s := startServer(t, app.Config{})
	c := connect(t, s)
	db := c.Database("test")
	for _, tc := range driverCases {
		err := db.RunCommand(ctxT(t), tc.cmd).Err()
		t.Logf("%-45s → %v", tc.name, err)
		wantCode(t, err, tc.code, tc.msg)
		if err := db.RunCommand(ctxT(t), pingCmd()[:1]).Err(); err != nil {
			t.Fatalf("after %s the connection fails: %v", tc.name, err)
		}
	}
	// A document over 16 MiB through the driver's insert: refused, and the
	// same client carries on.
	big := bson.D{{Key: "pad", Value: strings.Repeat("x", 16<<20)}}
	_, err := db.Collection("c").InsertOne(ctxT(t), big)
	t.Logf("%-45s → %v", "InsertOne of a 16 MiB + 14 byte document", err)
	if err == nil {
		t.Fatal("a document over 16 MiB was accepted")
	}
	if _, err := db.Collection("c").InsertOne(ctxT(t), bson.D{{Key: "small", Value: 1}}); err != nil {
		t.Fatalf("insert after the refused one: %v", err)
	}
}
