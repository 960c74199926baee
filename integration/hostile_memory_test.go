package integration

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/wire"
)

// residentBytes is this process's VmRSS after a full collection that
// returns freed memory to the system, so that what remains is what is held.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// inflatingMessage is an OP_COMPRESSED ping of a few kilobytes whose
// payload inflates to about 45 MB: three 15 MB documents in a kind-1
// sequence.
func inflatingMessage(t *testing.T, compressor wire.CompressorID) []byte {
	t.Helper()
	pad := strings.Repeat("x", 15<<20)
	var docs [][]byte
	for i := range 3 {
		docs = append(docs, docBytes(t, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}))
	}
	plain := rawOpMsg(0, kind0raw(docBytes(t, pingCmd())), kind1raw("documents", docs...))[16:]
	var packed []byte
	switch compressor {
	case wire.CompressorZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		packed = enc.EncodeAll(plain, nil)
	case wire.CompressorZlib:
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		_, _ = w.Write(plain)
		_ = w.Close()
		packed = b.Bytes()
	}
	body := binary.LittleEndian.AppendUint32(nil, uint32(wire.OpMsg))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(plain)))
	body = append(body, byte(compressor))
	body = append(body, packed...)
	return append(header(int32(16+len(body)), wire.OpCompressed), body...)
}

// TestHostileDecompressionNotPinned: small messages that inflate to 45 MB,
// sent on 20 connections that then sit idle, leave no inflated buffer
// behind (before: 45 MB held by each idle connection, 900 MB in all).
func TestHostileDecompressionNotPinned(t *testing.T) {
	srv := startServer(t, app.Config{})
	bombs := map[wire.CompressorID][]byte{
		wire.CompressorZstd: inflatingMessage(t, wire.CompressorZstd),
		wire.CompressorZlib: inflatingMessage(t, wire.CompressorZlib),
	}
	t.Logf("zstd message %d bytes, zlib %d bytes, each inflating to %d", len(bombs[wire.CompressorZstd]), len(bombs[wire.CompressorZlib]), 45<<20)
	before := residentBytes(t)
	const conns = 20
	for i := range conns {
		nc, err := net.DialTimeout("tcp", srv.app.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		msg := bombs[wire.CompressorZstd]
		if i%2 == 1 {
			msg = bombs[wire.CompressorZlib]
		}
		if _, err := nc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := readRawReply(nc, 20*time.Second); err != nil {
			t.Fatalf("reply: %v", err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the connections go idle
	held := residentBytes(t) - before
	t.Logf("resident: %d MiB before, %+d MiB with %d idle connections after their inflated messages", before>>20, held>>20, conns)
	if held > 150<<20 { // a fixed ~85 MiB is the shared zstd decoder and the test's own garbage
		t.Fatalf("idle connections hold %d MiB after their messages were handled", held>>20)
	}
	pingFresh(t, srv.app.Addr().String())
}
