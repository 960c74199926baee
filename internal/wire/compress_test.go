package wire

import (
	"bytes"
	stdzlib "compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestCompressedRoundTrip(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}, {Key: "pad", Value: string(bytes.Repeat([]byte("ab"), 500))}})
	d := mustDoc(t, bson.D{{Key: "_id", Value: int32(1)}})
	q := mustDoc(t, bson.D{{Key: "isMaster", Value: 1}})
	codec := NewCodec(allCompressors...)
	for _, id := range append([]CompressorID{CompressorNoop}, allCompressors...) {
		for _, plain := range [][]byte{
			AppendMsg(nil, 11, 0, 0, body, Sequence{Identifier: "documents", Docs: []bson.Raw{d, d}}),
			AppendMsg(nil, 11, 0, FlagChecksumPresent, body),
			AppendQuery(nil, 11, "admin.$cmd", q),
		} {
			wrapped, err := codec.Compress(nil, plain, id)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			m, err := ReadMessage(bytes.NewReader(wrapped), codec)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if !m.Compressed || m.Compressor != id || m.Header.OpCode != OpCompressed ||
				m.Header.RequestID != 11 || m.Header.MessageLength != int32(len(wrapped)) {
				t.Fatalf("%s: message %+v", id, m)
			}
			orig, err := ReadMessage(bytes.NewReader(plain), nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.OpCode != orig.OpCode || !bytes.Equal(m.Body, orig.Body) || len(m.Sequences) != len(orig.Sequences) {
				t.Fatalf("%s: decompressed %v differs from %v", id, m.Body, orig.Body)
			}
		}
	}
}

// Payloads made by independent encoders (the standard library's zlib, which
// the Go driver uses, and stock snappy/zstd settings as drivers use them)
// must decompress here, and ours must decompress with independent decoders.
func TestCompressionInterop(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "x", Value: string(bytes.Repeat([]byte("xyz"), 300))}}}})
	plain := AppendMsg(nil, 4, 0, 0, body)
	inner := plain[HeaderSize:]
	codec := NewCodec(allCompressors...)
	for _, id := range allCompressors {
		payload := foreignCompress(t, id, inner)
		m, err := ReadMessage(bytes.NewReader(compressedRaw(OpMsg, int32(len(inner)), id, payload)), codec)
		if err != nil {
			t.Fatalf("%s: foreign payload rejected: %v", id, err)
		}
		if !bytes.Equal(m.Body, body) {
			t.Fatalf("%s: foreign payload decoded wrongly", id)
		}
		ours, err := codec.Compress(nil, plain, id)
		if err != nil {
			t.Fatal(err)
		}
		if back := foreignDecompress(t, id, ours[compressedPrefix:]); !bytes.Equal(back, inner) {
			t.Fatalf("%s: our payload does not decompress elsewhere", id)
		}
	}
}

func foreignCompress(t *testing.T, id CompressorID, src []byte) []byte {
	t.Helper()
	switch id {
	case CompressorSnappy:
		return snappy.Encode(nil, src)
	case CompressorZlib:
		var b bytes.Buffer
		zw, _ := stdzlib.NewWriterLevel(&b, 6)
		_, _ = zw.Write(src)
		_ = zw.Close()
		return b.Bytes()
	case CompressorZstd:
		// A streamed frame carries no content size, unlike EncodeAll's.
		var b bytes.Buffer
		zw, err := zstd.NewWriter(&b, zstd.WithWindowSize(8<<20), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = zw.Write(src)
		_ = zw.Close()
		return b.Bytes()
	}
	t.Fatalf("no foreign compressor for %s", id)
	return nil
}

func foreignDecompress(t *testing.T, id CompressorID, src []byte) []byte {
	t.Helper()
	var r io.Reader
	switch id {
	case CompressorSnappy:
		out, err := snappy.Decode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case CompressorZlib:
		zr, err := stdzlib.NewReader(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case CompressorZstd:
		zr, err := zstd.NewReader(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return out
}

// Payloads compressed by the official Go driver must decompress here, and
// ours must decompress there.
func TestCompressionInteropWithDriver(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "pad", Value: string(bytes.Repeat([]byte("qrs"), 400))}})
	plain := AppendMsg(nil, 4, 0, 0, body)
	inner := plain[HeaderSize:]
	codec := NewCodec(allCompressors...)
	for _, id := range allCompressors {
		opts := driver.CompressionOpts{Compressor: wiremessage.CompressorID(id), ZlibLevel: 6, ZstdLevel: 6, UncompressedSize: int32(len(inner))}
		payload, err := driver.CompressPayload(inner, opts)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ReadMessage(bytes.NewReader(compressedRaw(OpMsg, int32(len(inner)), id, payload)), codec)
		if err != nil || !bytes.Equal(m.Body, body) {
			t.Fatalf("%s: driver payload: %v", id, err)
		}
		ours, err := codec.Compress(nil, plain, id)
		if err != nil {
			t.Fatal(err)
		}
		back, err := driver.DecompressPayload(ours[compressedPrefix:], opts)
		if err != nil || !bytes.Equal(back, inner) {
			t.Fatalf("%s: driver cannot read our payload: %v", id, err)
		}
	}
}

// compressedRaw builds an OP_COMPRESSED around an arbitrary payload.
func compressedRaw(orig OpCode, size int32, id CompressorID, payload []byte) []byte {
	b := make([]byte, compressedPrefix, compressedPrefix+len(payload))
	binary.LittleEndian.PutUint32(b[HeaderSize:], uint32(orig))
	binary.LittleEndian.PutUint32(b[HeaderSize+4:], uint32(size))
	b[HeaderSize+8] = byte(id)
	b = append(b, payload...)
	putHeader(b, Header{int32(len(b)), 21, 0, OpCompressed})
	return b
}

func TestCompressedMalformed(t *testing.T) {
	codec := NewCodec(allCompressors...)
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	plain := AppendMsg(nil, 1, 0, 0, body)
	inner := plain[HeaderSize:]
	size := int32(len(inner))
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 16)
	type tc struct {
		name     string
		in       []byte
		code     mongoerr.Code
		fatal    bool
		consumed bool
	}
	cases := []tc{
		{"too short", compressedRaw(OpMsg, size, 0, nil)[:HeaderSize+5], mongoerr.ProtocolError, true, true},
		{"uncompressedSize over limit", compressedRaw(OpMsg, MaxMessageSize, 0, inner), mongoerr.ProtocolError, true, true},
		{"negative uncompressedSize", compressedRaw(OpMsg, -1, 0, inner), mongoerr.ProtocolError, true, true},
		{"unknown compressor", compressedRaw(OpMsg, size, 9, inner), mongoerr.ProtocolError, true, true},
		{"wraps OP_COMPRESSED", compressedRaw(OpCompressed, size, 0, inner), mongoerr.ProtocolError, true, true},
		{"wraps OP_REPLY", compressedRaw(OpReply, size, 0, inner), mongoerr.ProtocolError, true, true},
		{"noop size mismatch", compressedRaw(OpMsg, size+1, 0, inner), mongoerr.ProtocolError, true, true},
		{"inner framing broken", compressedRaw(OpMsg, 5, 0, []byte{0, 0, 0, 0, 9}), 40432, true, true},
		{"inner BSON invalid", compressedRaw(OpMsg, 17, 0, append([]byte{0, 0, 0, 0, 0}, 12, 0, 0, 0, 0x77, 'a', 0, 1, 2, 3, 4, 0)), mongoerr.InvalidBSON, false, true},
	}
	// Fix "too short": the header must claim what is there.
	putHeader(cases[0].in, Header{int32(len(cases[0].in)), 21, 0, OpCompressed})
	for _, id := range allCompressors {
		good, err := codec.Compress(nil, plain, id)
		if err != nil {
			t.Fatal(err)
		}
		payload := good[compressedPrefix:]
		cases = append(cases,
			tc{id.String() + " garbage payload", compressedRaw(OpMsg, size, id, garbage), mongoerr.ProtocolError, true, true},
			tc{id.String() + " truncated payload", compressedRaw(OpMsg, size, id, payload[:len(payload)/2]), mongoerr.ProtocolError, true, true},
			tc{id.String() + " announces more", compressedRaw(OpMsg, size+10, id, payload), mongoerr.ProtocolError, true, true},
			tc{id.String() + " announces less", compressedRaw(OpMsg, size-1, id, payload), mongoerr.ProtocolError, true, true},
			tc{id.String() + " empty payload", compressedRaw(OpMsg, size, id, nil), mongoerr.ProtocolError, true, true},
		)
	}
	follow := AppendMsg(nil, 77, 0, 0, body)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(append(append([]byte{}, c.in...), follow...)), codec)
			_, err := r.ReadMessage()
			we := wantWireErr(t, err, c.code, c.fatal, c.consumed)
			if we.Header.OpCode != OpCompressed {
				t.Fatalf("error header %+v", we.Header)
			}
			if m, err := r.ReadMessage(); err != nil || m.Header.RequestID != 77 {
				t.Fatalf("stream misaligned after %s: %v", c.name, err)
			}
		})
	}
}

func TestCompressorNotAccepted(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}})
	wrapped, err := NewCodec(allCompressors...).Compress(nil, AppendMsg(nil, 1, 0, 0, body), CompressorZstd)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadMessage(bytes.NewReader(wrapped), NewCodec(CompressorSnappy))
	wantWireErr(t, err, mongoerr.ProtocolError, true, true)
	if _, err := ReadMessage(bytes.NewReader(wrapped), NewCodec(CompressorZstd)); err != nil {
		t.Fatalf("accepted compressor rejected: %v", err)
	}
}

// A small payload that inflates far beyond its announced size must be
// refused without inflating it all.
func TestDecompressionBomb(t *testing.T) {
	codec := NewCodec(allCompressors...)
	huge := make([]byte, 30<<20)
	for _, id := range allCompressors {
		payload, err := codec.compress(id, nil, huge)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadMessage(bytes.NewReader(compressedRaw(OpMsg, 100, id, payload)), codec)
		var we *Error
		if !errors.As(err, &we) || !errors.Is(err, errSizeMismatch) {
			t.Fatalf("%s: got %v, want size mismatch", id, err)
		}
	}
}

// A huge announced size that the payload cannot produce is refused before
// the buffer for it is allocated.
func TestClaimedSizeCheckedBeforeAllocation(t *testing.T) {
	codec := NewCodec(allCompressors...)
	small := AppendMsg(nil, 1, 0, 0, mustDoc(t, bson.D{{Key: "ping", Value: 1}}))[HeaderSize:]
	// Big and compressible: the claim is within zstd's ratio bound, so the
	// frame's recorded content size must catch it.
	big := AppendMsg(nil, 1, 0, 0, mustDoc(t, bson.D{{Key: "pad", Value: strings.Repeat("a", 4000)}}))[HeaderSize:]
	for _, id := range append([]CompressorID{CompressorNoop}, allCompressors...) {
		for _, inner := range [][]byte{small, big} {
			payload, err := codec.compress(id, nil, inner)
			if err != nil {
				t.Fatal(err)
			}
			claim := MaxMessageSize - HeaderSize
			if id == CompressorZstd && len(inner) == len(big) {
				claim = min(claim, maxZstdRatio*len(payload))
			}
			checkClaimRefused(t, codec, id, compressedRaw(OpMsg, int32(claim), id, payload))
		}
	}
}

func checkClaimRefused(t *testing.T, codec *Codec, id CompressorID, msg []byte) {
	t.Helper()
	r := NewReader(bytes.NewReader(msg), codec)
	if _, err := r.ReadMessage(); !errors.Is(err, errSizeMismatch) {
		t.Fatalf("%s: got %v, want size mismatch", id, err)
	}
	if cap(r.dbuf) != 0 {
		t.Fatalf("%s: allocated %d bytes for an impossible size", id, cap(r.dbuf))
	}
}
