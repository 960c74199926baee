package wire

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A message inflating past smallBuffer leaves nothing of that size behind
// once released: not in the Reader, and not in an idle zstd decoder, which
// would otherwise keep a reference to its last output. Every compressor,
// noop included, fills the same decompression buffer.
func TestReleaseKeepsNoInflatedBuffer(t *testing.T) {
	big := AppendMsg(nil, 1, 0, 0, mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 4*smallBuffer)}}))
	small := AppendMsg(nil, 2, 0, 0, mustDoc(t, bson.D{{Key: "ping", Value: 1}}))
	for _, id := range append([]CompressorID{CompressorNoop}, allCompressors...) {
		t.Run(id.String(), func(t *testing.T) {
			codec := NewCodec(allCompressors...)
			var stream bytes.Buffer
			for _, plain := range [][]byte{big, small} {
				wrapped, err := codec.Compress(nil, plain, id)
				if err != nil {
					t.Fatal(err)
				}
				stream.Write(wrapped)
			}
			r := NewReader(&stream, codec)
			if _, err := r.ReadMessage(); err != nil {
				t.Fatal(err)
			}
			if dropped := r.Release(); dropped < len(big) {
				t.Fatalf("released %d bytes after a %d-byte message", dropped, len(big))
			}
			if held := r.Held(); held > 2*smallBuffer {
				t.Fatalf("an idle reader holds %d bytes", held)
			}
			if n := len(codec.zstdDecs); n != 0 {
				t.Fatalf("%d idle zstd decoders kept after a large output", n)
			}
			m, err := r.ReadMessage()
			if err != nil || m.Header.RequestID != 2 {
				t.Fatalf("next message %+v, %v", m, err)
			}
			if dropped := r.Release(); dropped != 0 {
				t.Fatalf("released %d bytes after a small message", dropped)
			}
			if want := b2i(id == CompressorZstd); len(codec.zstdDecs) != want {
				t.Fatalf("%d idle zstd decoders after a small message, want %d", len(codec.zstdDecs), want)
			}
		})
	}
}

// A big reply's buffers are dropped by Release, for every compressor.
func TestWriterReleaseDropsBigReply(t *testing.T) {
	reply := bson.D{{Key: "ok", Value: 1}, {Key: "pad", Value: strings.Repeat("y", 4*smallBuffer)}}
	for _, id := range append([]CompressorID{CompressorNoop}, allCompressors...) {
		t.Run(id.String(), func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(&out, NewCodec(allCompressors...))
			if err := w.WriteCompressedMsg(1, reply, id); err != nil {
				t.Fatal(err)
			}
			if dropped := w.Release(); dropped < 4*smallBuffer {
				t.Fatalf("released %d bytes after a %d-byte reply", dropped, out.Len())
			}
			if held := w.Held(); held > 2*smallBuffer {
				t.Fatalf("an idle writer holds %d bytes", held)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
