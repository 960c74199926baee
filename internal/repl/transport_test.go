package repl

import (
	"bufio"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/wire"
)

// fakeMember stands for another member's process on 127.0.0.1: it reads
// the messages sent to it and says which of its lives read each, and it
// restarts on the same address as a killed member's new process does.
type fakeMember struct {
	t     *testing.T
	addr  string
	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	life  int
	got   chan int // the life that read a message
}

func startFakeMember(t *testing.T) *fakeMember {
	t.Helper()
	f := &fakeMember{t: t, addr: "127.0.0.1:0", got: make(chan int, 16)}
	f.listen()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeMember) listen() {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatalf("listen: %v", err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.life++
	life := f.life
	f.mu.Unlock()
	go f.accept(ln, life)
}

func (f *fakeMember) accept(ln net.Listener, life int) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, nc)
		f.mu.Unlock()
		go f.read(nc, life)
	}
}

func (f *fakeMember) read(nc net.Conn, life int) {
	r := wire.NewReader(bufio.NewReader(nc), wire.NewCodec())
	for {
		if _, err := r.ReadMessage(); err != nil {
			return
		}
		f.got <- life
	}
}

// stop ends this life: the listener and every connection close, as when
// the process exits.
func (f *fakeMember) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.ln.Close()
	for _, nc := range f.conns {
		_ = nc.Close()
	}
	f.conns = nil
}

func (f *fakeMember) restart() {
	f.stop()
	f.listen()
}

// expect waits (bounded) for a message read by life.
func (f *fakeMember) expect(life int) {
	f.t.Helper()
	select {
	case got := <-f.got:
		if got != life {
			f.t.Fatalf("message read by life %d of the member, want %d", got, life)
		}
	case <-time.After(10 * time.Second):
		f.t.Fatalf("no message reached life %d of the member within 10s: it went into the connection to the process that ended", life)
	}
}

// A member that restarted gets the first batch sent to it after its old
// process ended: the sender sees that the member ended the connection
// (no reply ever comes on it, replSetRaft goes moreToCome) and dials the
// new process, instead of writing the batch, without an error, into the
// dead connection, where a vote would be lost.
func TestBatchAfterMemberRestartReachesTheNewProcess(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open storage: %v", err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	rs, err := Open(Config{SetName: "rs0", Self: "127.0.0.1:50001", Base: eng, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	member := startFakeMember(t)
	// The peer is driven from this goroutine (deliver), not by its run
	// loop, so the test waits for what the peer saw without racing it.
	p := &peer{t: rs.transport, id: 2}
	p.addr.Store(&member.addr)
	t.Cleanup(p.closeConn)
	vote := []*pb.Message{{Type: pb.MessageType_MsgVote.Enum(), To: proto.Uint64(2), From: proto.Uint64(1), Term: proto.Uint64(7)}}
	if err := p.deliver(vote); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	member.expect(1)
	member.restart()
	select {
	case <-p.connEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the sender did not see the member end the connection within 10s")
	}
	if err := p.deliver(vote); err != nil {
		t.Fatalf("delivery after the restart: %v", err)
	}
	member.expect(2)
}
