package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wire"
)

// The null server advertises what Mayfly's hello does (see
// internal/commands cmdHello), so the driver treats both alike.
const (
	nullMaxWireVersion = 25
	nullSessionMinutes = 30
	nullBufferSize     = 16 << 10
)

// nullReplies are the null server's complete reply messages, encoded once
// at start. Only the responseTo field differs between two replies, and
// each connection patches its own copy in place.
type nullReplies struct {
	helloMsg   []byte // OP_MSG answer to hello / isMaster
	helloReply []byte // OP_REPLY answer to the legacy OP_QUERY handshake
	generic    []byte // OP_MSG answer to every other command
}

func encodeNullReplies() (*nullReplies, error) {
	hello, err := bson.Marshal(bson.D{
		{Key: "helloOk", Value: true},
		{Key: "ismaster", Value: true},
		{Key: "isWritablePrimary", Value: true},
		{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		{Key: "maxWriteBatchSize", Value: int32(wire.MaxWriteBatchSize)},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		{Key: "logicalSessionTimeoutMinutes", Value: int32(nullSessionMinutes)},
		{Key: "connectionId", Value: int32(1)},
		{Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(nullMaxWireVersion)},
		{Key: "readOnly", Value: false},
		{Key: "ok", Value: 1.0},
	})
	if err != nil {
		return nil, fmt.Errorf("null server: encode hello: %w", err)
	}
	// One reply that every workload command accepts: n and nModified for
	// insert, update and delete, a one-document cursor for find.
	generic, err := bson.Marshal(bson.D{
		{Key: "n", Value: int32(1)},
		{Key: "nModified", Value: int32(1)},
		{Key: "cursor", Value: bson.D{
			{Key: "firstBatch", Value: bson.A{bson.D{
				{Key: "_id", Value: bson.NewObjectID()},
				{Key: "token", Value: token(0)},
				{Key: "userID", Value: userID(0)},
				{Key: "accessTime", Value: bson.NewDateTimeFromTime(time.Now())},
			}}},
			{Key: "id", Value: int64(0)},
			{Key: "ns", Value: benchDB + "." + sessionsColl},
		}},
		{Key: "ok", Value: 1.0},
	})
	if err != nil {
		return nil, fmt.Errorf("null server: encode reply: %w", err)
	}
	return &nullReplies{
		helloMsg:   wire.AppendMsg(nil, 1, 0, 0, hello),
		helloReply: wire.AppendReply(nil, 1, 0, hello),
		generic:    wire.AppendMsg(nil, 1, 0, 0, generic),
	}, nil
}

func (r *nullReplies) clone() *nullReplies {
	return &nullReplies{
		helloMsg:   bytes.Clone(r.helloMsg),
		helloReply: bytes.Clone(r.helloReply),
		generic:    bytes.Clone(r.generic),
	}
}

// pick returns the reply to a request, or nil when the request asks for
// none (OP_MSG moreToCome). body is the message after its header.
func (r *nullReplies) pick(op wire.OpCode, body []byte) ([]byte, error) {
	switch op {
	case wire.OpQuery:
		return r.helloReply, nil
	case wire.OpMsg:
	default:
		return nil, fmt.Errorf("null server: unsupported opcode %v", op)
	}
	// flagBits(4), section kind(1), document: length(4), type(1), key.
	if len(body) < 10 || body[4] != 0 {
		return nil, errors.New("null server: OP_MSG does not start with a body section")
	}
	if binary.LittleEndian.Uint32(body)&wire.FlagMoreToCome != 0 {
		return nil, nil
	}
	key := body[10:]
	if i := bytes.IndexByte(key, 0); i >= 0 {
		key = key[:i]
	}
	switch string(key) {
	case "hello", "isMaster", "ismaster":
		return r.helloMsg, nil
	}
	return r.generic, nil
}

// ServeNull runs the null server on addr until ctx ends: it frames each
// request, looks at its command name, and writes a pre-encoded reply with
// the request's id patched in. It does nothing else.
func ServeNull(ctx context.Context, addr string) error {
	replies, err := encodeNullReplies()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("null server: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("null server: accept: %w", err)
		}
		go serveNullConn(c, replies.clone())
	}
}

// serveNullConn answers one connection until it closes or misbehaves.
func serveNullConn(c net.Conn, r *nullReplies) {
	defer c.Close()
	br := bufio.NewReaderSize(c, nullBufferSize)
	bw := bufio.NewWriterSize(c, nullBufferSize)
	var hdr [wire.HeaderSize]byte
	body := make([]byte, nullBufferSize)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := int(int32(binary.LittleEndian.Uint32(hdr[0:])))
		if n < wire.HeaderSize || n > wire.MaxMessageSize {
			return
		}
		if cap(body) < n-wire.HeaderSize {
			body = make([]byte, n-wire.HeaderSize)
		}
		body = body[:n-wire.HeaderSize]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		reply, err := r.pick(wire.OpCode(int32(binary.LittleEndian.Uint32(hdr[12:]))), body)
		if err != nil {
			return
		}
		if reply == nil {
			continue
		}
		copy(reply[8:12], hdr[4:8]) // responseTo = the request's id
		if _, err := bw.Write(reply); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
