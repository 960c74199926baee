package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestWriteMsgRoundTrip(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, NewCodec(allCompressors...))
	reply := bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(3)}}
	if err := w.WriteMsg(41, reply); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMsg(42, mustDoc(t, reply)); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&out, nil)
	for i, want := range []int32{41, 42} {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.ResponseTo != want || m.Header.RequestID != int32(i+1) || m.Flags != 0 || len(m.Sequences) != 0 {
			t.Fatalf("reply header %+v flags %b", m.Header, m.Flags)
		}
		if !bytes.Equal(m.Body, mustDoc(t, reply)) {
			t.Fatalf("reply body %v", m.Body)
		}
	}
}

func TestWriteCompressedMsg(t *testing.T) {
	reply := bson.D{{Key: "ok", Value: 1.0}, {Key: "pad", Value: strings.Repeat("z", 2000)}}
	for _, id := range append([]CompressorID{CompressorNoop}, allCompressors...) {
		var out bytes.Buffer
		codec := NewCodec(allCompressors...)
		w := NewWriter(&out, codec)
		if err := w.WriteCompressedMsg(8, reply, id); err != nil {
			t.Fatal(err)
		}
		if id != CompressorNoop && out.Len() > 1000 {
			t.Fatalf("%s: reply of %d bytes was not compressed", id, out.Len())
		}
		m, err := ReadMessage(&out, codec)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if !m.Compressed || m.Compressor != id || m.OpCode != OpMsg || m.Header.ResponseTo != 8 ||
			!bytes.Equal(m.Body, mustDoc(t, reply)) {
			t.Fatalf("%s: got %+v", id, m)
		}
	}
}

func TestWriteReply(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, nil)
	doc := bson.D{{Key: "ismaster", Value: true}, {Key: "ok", Value: 1.0}}
	if err := w.WriteReply(77, doc); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	h := decodeHeader(b)
	if h.OpCode != OpReply || h.ResponseTo != 77 || h.MessageLength != int32(len(b)) {
		t.Fatalf("header %+v", h)
	}
	p := b[HeaderSize:]
	flags := binary.LittleEndian.Uint32(p)
	cursor := binary.LittleEndian.Uint64(p[4:])
	from := binary.LittleEndian.Uint32(p[12:])
	n := binary.LittleEndian.Uint32(p[16:])
	if flags != 0 || cursor != 0 || from != 0 || n != 1 {
		t.Fatalf("OP_REPLY fields flags=%d cursor=%d from=%d n=%d", flags, cursor, from, n)
	}
	if !bytes.Equal(p[20:], mustDoc(t, doc)) {
		t.Fatal("OP_REPLY document differs")
	}
	if !bytes.Equal(b, AppendReply(nil, 1, 77, mustDoc(t, doc))) {
		t.Fatal("WriteReply and AppendReply disagree")
	}
}

func TestWriteEncodeErrorRecovers(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, nil)
	var ee *EncodeError
	if err := w.WriteMsg(1, bson.D{{Key: "bad", Value: make(chan int)}}); !errors.As(err, &ee) {
		t.Fatalf("unencodable reply: got %v, want *EncodeError", err)
	}
	if err := w.WriteMsg(1, "not a document"); !errors.As(err, &ee) {
		t.Fatalf("non-document reply: got %v, want *EncodeError", err)
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes written for failed replies", out.Len())
	}
	if err := w.WriteMsg(2, bson.D{{Key: "ok", Value: 1.0}}); err != nil {
		t.Fatalf("writer unusable after an encode error: %v", err)
	}
	if m, err := ReadMessage(&out, nil); err != nil || m.Header.ResponseTo != 2 {
		t.Fatalf("reply after error: %v", err)
	}
}

func TestWriteRawReplyDoesNotAllocate(t *testing.T) {
	w := NewWriter(discard{}, nil)
	var doc any = mustDoc(t, bson.D{{Key: "ok", Value: 1.0}})
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.WriteMsg(1, doc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per raw reply", allocs)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
