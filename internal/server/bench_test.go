package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wire"
)

// pingHandler answers every command with a fixed document, so the
// benchmark measures the server's own per-request cost.
type pingHandler struct{}

func (pingHandler) Handle(context.Context, *Conn, *Command) bson.D {
	return bson.D{{Key: "ok", Value: 1.0}}
}

// nullServer is the baseline: it frames requests and answers each with a
// pre-encoded reply, doing no decoding at all.
func nullServer(b *testing.B) net.Addr {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	reply := wire.AppendMsg(nil, 1, 0, 0, marshalB(b, bson.D{{Key: "ok", Value: 1.0}}))
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveNull(nc, append([]byte(nil), reply...))
		}
	}()
	return ln.Addr()
}

func serveNull(nc net.Conn, reply []byte) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(br, buf[:wire.HeaderSize]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(buf))
		if n < wire.HeaderSize || n > len(buf) {
			return
		}
		if _, err := io.ReadFull(br, buf[wire.HeaderSize:n]); err != nil {
			return
		}
		copy(reply[8:12], buf[4:8]) // responseTo = requestID
		if _, err := nc.Write(reply); err != nil {
			return
		}
	}
}

func marshalB(b *testing.B, v any) []byte {
	out, err := bson.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchPing runs request/reply round trips from parallel clients.
func benchPing(b *testing.B, addr net.Addr) {
	req := wire.AppendMsg(nil, 1, 0, 0, marshalB(b, bson.D{
		{Key: "find", Value: "events"},
		{Key: "filter", Value: bson.D{{Key: "user", Value: "u123"}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
		{Key: "$db", Value: "app"},
	}))
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		nc, err := net.Dial("tcp", addr.String())
		if err != nil {
			b.Error(err)
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		hdr := make([]byte, wire.HeaderSize)
		body := make([]byte, 4096)
		for pb.Next() {
			if _, err := nc.Write(req); err != nil {
				b.Error(err)
				return
			}
			if _, err := io.ReadFull(br, hdr); err != nil {
				b.Error(err)
				return
			}
			n := int(binary.LittleEndian.Uint32(hdr)) - wire.HeaderSize
			if _, err := io.ReadFull(br, body[:n]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkNullServer(b *testing.B) {
	benchPing(b, nullServer(b))
}

func BenchmarkServerRoundTrip(b *testing.B) {
	s := New(Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, pingHandler{})
	if err := s.Listen(); err != nil {
		b.Fatal(err)
	}
	go s.Serve()
	b.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	benchPing(b, s.Addr())
}

// BenchmarkCommandContext is what the connection loop spends on each
// command's context and its watch for the client leaving (watchPeer and
// stopWatch), from many connections at once as a loaded server runs them.
func BenchmarkCommandContext(b *testing.B) {
	s := New(Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, pingHandler{})
	b.SetParallelism(4)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		client, server := net.Pipe()
		defer client.Close()
		c := newConn(s, server)
		for pb.Next() {
			ctx, _ := c.watchPeer()
			if ctx.Err() != nil {
				b.Error("context ended early")
			}
			c.stopWatch()
		}
	})
}
