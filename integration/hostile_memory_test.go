package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wire"
)

// inflatedSize is what each hostile message inflates to: close to the
// 48 MB wire limit, so it is the worst a single message can do.
const inflatedSize = 47_000_000

// residentBytes is this process's VmRSS after a full collection that
// returns freed memory to the system, so that what remains is what is held
// by live objects (not what the runtime has yet to give back).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	return processRSS(t, os.Getpid())
}

// processRSS reads VmRSS of process pid from /proc. It forces nothing: the
// figure is what the server holds on its own.
func processRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read server status: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("parse VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// inflatingMessage is an OP_COMPRESSED ping, a few kilobytes to a few
// megabytes on the wire, whose payload inflates to inflatedSize bytes: the
// command and three documents of nearly 16 MB in a kind-1 sequence.
func inflatingMessage(t *testing.T, compressor wire.CompressorID) []byte {
	t.Helper()
	plain := inflatingPlain(t)
	body := binary.LittleEndian.AppendUint32(nil, uint32(wire.OpMsg))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(plain)))
	body = append(body, byte(compressor))
	body = append(body, compress(t, compressor, plain)...)
	return append(header(int32(16+len(body)), wire.OpCompressed), body...)
}

// inflatingPlain is the OP_MSG, header excluded, of exactly inflatedSize
// bytes with the header: the pads of three documents share what the
// command and the framing leave.
func inflatingPlain(t *testing.T) []byte {
	t.Helper()
	cmd := kind0raw(docBytes(t, pingCmd()))
	doc := func(id, pad int) []byte {
		return docBytes(t, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", pad)}})
	}
	free := inflatedSize - len(rawOpMsg(0, cmd, kind1raw("documents"))) - 3*len(doc(0, 0))
	docs := [][]byte{doc(0, free/3+free%3), doc(1, free/3), doc(2, free/3)}
	plain := rawOpMsg(0, cmd, kind1raw("documents", docs...))[16:]
	if len(plain)+16 != inflatedSize {
		t.Fatalf("inflating message is %d bytes, want %d", len(plain)+16, inflatedSize)
	}
	return plain
}

func compress(t *testing.T, compressor wire.CompressorID, plain []byte) []byte {
	t.Helper()
	switch compressor {
	case wire.CompressorZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeAll(plain, nil)
	case wire.CompressorZlib:
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		_, _ = w.Write(plain)
		_ = w.Close()
		return b.Bytes()
	case wire.CompressorSnappy:
		return snappy.Encode(nil, plain)
	}
	t.Fatalf("no test encoder for compressor %s", compressor)
	return nil
}

// TestHostileDecompressionNotPinned: twenty connections each send one small
// message that inflates to 47 MB and then sit idle; the server process's
// resident memory comes back to within 150 MB of its baseline (before: 47 MB
// pinned by each idle connection). One row per compressor the server
// accepts, each against a fresh server process whose VmRSS is read from
// /proc, so that nothing the test does (a forced collection, its own
// buffers) flatters the figure.
func TestHostileDecompressionNotPinned(t *testing.T) {
	rows := []wire.CompressorID{wire.CompressorSnappy, wire.CompressorZlib, wire.CompressorZstd}
	var names []string
	for _, id := range rows {
		names = append(names, id.String())
	}
	if got, want := strings.Join(names, ","), strings.Join(server.DefaultCompressors(), ","); got != want {
		t.Fatalf("rows %s, but the server accepts %s: add a row", got, want)
	}
	bin := buildBinary(t)
	for _, id := range rows {
		t.Run(id.String(), func(t *testing.T) { checkInflationNotPinned(t, bin, id) })
	}
}

func checkInflationNotPinned(t *testing.T, bin string, id wire.CompressorID) {
	const conns, budget = 20, 150 << 20
	msg := inflatingMessage(t, id)
	p := startBinary(t, bin, t.TempDir(), freePort(t))
	pid := p.cmd.Process.Pid
	pingFresh(t, p.addr)
	time.Sleep(time.Second) // start-up settles
	before := processRSS(t, pid)
	ncs := make([]net.Conn, conns)
	for i := range ncs {
		ncs[i] = sendInflating(t, p.addr, msg)
	}
	answered := processRSS(t, pid)
	// Freed memory goes back to the system within a few seconds (the
	// server returns it at most once a second); a connection that pinned
	// its buffer would never give it back. A loaded machine gets longer.
	time.Sleep(3 * time.Second)
	held, deadline := processRSS(t, pid)-before, time.Now().Add(15*time.Second)
	for held > budget && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		held = processRSS(t, pid) - before
	}
	t.Logf("%s: %d-byte messages inflating to %d; server resident %d MiB before, %+d MiB when the last was answered, %+d MiB after settling, with %d idle connections",
		id, len(msg), inflatedSize, before>>20, (answered-before)>>20, held>>20, conns)
	if held > budget {
		t.Fatalf("%d idle connections hold %d MiB after their messages were answered (budget %d MiB)", conns, held>>20, budget>>20)
	}
	for i, nc := range ncs {
		if !rawPing(t, nc) {
			t.Fatalf("connection %d does not answer a ping after its inflated message", i)
		}
	}
}

// sendInflating opens a connection, sends msg, checks the answer and
// returns the connection, left open and idle.
func sendInflating(t *testing.T, addr string, msg []byte) net.Conn {
	t.Helper()
	nc := dialRaw(t, addr)
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	reply, err := readRawReply(nc, 30*time.Second)
	if err != nil {
		t.Fatalf("reply to the inflating message: %v", err)
	}
	if code := replyCode(t, reply); code != 0 {
		t.Fatalf("inflating ping answered with code %d: %v", code, reply)
	}
	return nc
}
