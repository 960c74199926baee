package commands

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wire"
)

// sessionWire is a Mayfly server on 127.0.0.1 with the session workload's
// collection loaded, and one raw client connection to it. Requests are
// built before they are sent and replies read into one reused buffer, so
// the client side allocates nothing: what a measurement counts is the
// server's request path (read, decode, dispatch, handler, store, reply).
type sessionWire struct {
	sb    *sessionBench
	nc    net.Conn
	reply []byte
}

func newSessionWire(tb testing.TB) *sessionWire {
	h, conn, cache := newResidentHandler(tb)
	sb := &sessionBench{h: h, conn: conn, cache: cache, lsid: benchLsid()}
	sb.load(tb, sessionOpsPreload)
	srv := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, h)
	if err := srv.Listen(); err != nil {
		tb.Fatalf("listen: %v", err)
	}
	go func() { _ = srv.Serve() }()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() {
		nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &sessionWire{sb: sb, nc: nc, reply: make([]byte, 64<<10)}
}

// roundTrip sends one request and checks its reply: ok, and for a write
// n ≥ 1, for a find one document in the first batch.
func (sw *sessionWire) roundTrip(msg []byte) error {
	if _, err := sw.nc.Write(msg); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	hdr := sw.reply[:wire.HeaderSize]
	if _, err := io.ReadFull(sw.nc, hdr); err != nil {
		return fmt.Errorf("read reply header: %w", err)
	}
	n := int(binary.LittleEndian.Uint32(hdr))
	if n < wire.HeaderSize+5 || n > len(sw.reply) {
		return fmt.Errorf("reply length %d out of range", n)
	}
	if _, err := io.ReadFull(sw.nc, sw.reply[wire.HeaderSize:n]); err != nil {
		return fmt.Errorf("read reply body: %w", err)
	}
	return checkSessionReply(bsoncore.Document(sw.reply[wire.HeaderSize+5 : n]))
}

// checkSessionReply reads the reply in place, so checking allocates nothing.
func checkSessionReply(doc bsoncore.Document) error {
	if ok, _ := doc.Lookup("ok").AsFloat64OK(); ok != 1 {
		return fmt.Errorf("reply not ok: %v", doc)
	}
	if _, err := doc.LookupErr("cursor"); err == nil {
		if _, err := doc.LookupErr("cursor", "firstBatch", "0"); err != nil {
			return fmt.Errorf("find found no session: %v", doc)
		}
		return nil
	}
	if n, _ := doc.Lookup("n").Int32OK(); n < 1 {
		return fmt.Errorf("write matched nothing: %v", doc)
	}
	return nil
}

// BenchmarkSessionWire is BenchmarkSessionOps through a real server and a
// loopback TCP connection: the connection loop, framing, decoding, the
// handler, the reply's encoding and its write. Its allocs/op are the
// request path's whole garbage (the client allocates nothing);
// TestSessionWireAllocs holds them under a ceiling. cpu-ns/op is the
// process's CPU time per operation, the client's included: ns/op is
// mostly the loopback's latency.
//
//	go test ./internal/commands -run XXX -bench SessionWire -benchtime 5000x -benchmem
func BenchmarkSessionWire(b *testing.B) {
	sw := newSessionWire(b)
	for _, op := range sessionOps {
		b.Run(op, func(b *testing.B) {
			msgs := sw.sb.requests(b, op, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU(b)
			for _, m := range msgs {
				if err := sw.roundTrip(m); err != nil {
					b.Fatalf("%s: %v", op, err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// sessionWireCeilings are the allocations per operation each session
// command may make through the whole server (BenchmarkSessionWire's
// allocs/op), set from measurement with a margin of a few. A change that
// adds garbage to the request path fails TestSessionWireAllocs; one that
// removes some should lower its row. The requests carry maxTimeMS, as the
// driver sends it from an operation's deadline (benchMaxTimeMS).
var sessionWireCeilings = map[string]float64{
	"touch":  27,
	"verify": 47,
	"login":  17,
	"logout": 23,
}

// TestSessionWireAllocs counts the allocations of each session command
// through a real server (testing.AllocsPerRun: exact, not timed) and
// fails above its ceiling. Every operation the workload has must have a
// ceiling, and every ceiling an operation.
func TestSessionWireAllocs(t *testing.T) {
	const runs = 300
	sw := newSessionWire(t)
	if len(sessionWireCeilings) != len(sessionOps) {
		t.Fatalf("%d ceilings for %d operations", len(sessionWireCeilings), len(sessionOps))
	}
	for _, op := range sessionOps {
		ceiling, ok := sessionWireCeilings[op]
		if !ok {
			t.Fatalf("operation %s has no ceiling", op)
		}
		msgs := sw.sb.requests(t, op, runs+1) // AllocsPerRun runs once more to warm up
		next := 0
		got := testing.AllocsPerRun(runs, func() {
			if err := sw.roundTrip(msgs[next]); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			next++
		})
		t.Logf("%s: %.0f allocations per operation (ceiling %.0f)", op, got, ceiling)
		if got > ceiling {
			t.Errorf("%s: %.0f allocations per operation, ceiling %.0f", op, got, ceiling)
		}
	}
}
