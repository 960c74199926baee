package wire

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// loopReader serves the same bytes forever, like a client repeating a request.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func benchRequest(b *testing.B) []byte {
	body := mustDoc(b, bson.D{
		{Key: "find", Value: "events"},
		{Key: "filter", Value: bson.D{{Key: "user", Value: "u123"}}},
		{Key: "limit", Value: int32(1)},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
		{Key: "$db", Value: "app"},
	})
	return AppendMsg(nil, 1, 0, 0, body)
}

func BenchmarkReadOpMsg(b *testing.B) {
	req := benchRequest(b)
	r := NewReader(bufio.NewReader(&loopReader{data: req}), nil)
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadOpMsgCommand(b *testing.B) {
	req := benchRequest(b)
	r := NewReader(bufio.NewReader(&loopReader{data: req}), nil)
	b.ReportAllocs()
	for b.Loop() {
		m, err := r.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Command(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCommandReference(b *testing.B) {
	m, err := ReadMessage(bytes.NewReader(benchRequest(b)), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var d bson.D
		if err := bson.Unmarshal(m.Body, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteReply(b *testing.B) {
	w := NewWriter(io.Discard, nil)
	reply := bson.D{
		{Key: "cursor", Value: bson.D{
			{Key: "firstBatch", Value: bson.A{bson.D{{Key: "_id", Value: int32(1)}, {Key: "user", Value: "u123"}}}},
			{Key: "id", Value: int64(0)},
			{Key: "ns", Value: "app.events"},
		}},
		{Key: "ok", Value: 1.0},
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteMsg(1, reply); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteReplyCompressed(b *testing.B) {
	for _, id := range allCompressors {
		b.Run(id.String(), func(b *testing.B) {
			w := NewWriter(io.Discard, NewCodec(allCompressors...))
			reply := bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(1)}}
			b.ReportAllocs()
			for b.Loop() {
				if err := w.WriteCompressedMsg(1, reply, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
