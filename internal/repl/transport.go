package repl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/wire"
)

// Members talk to each other on the address clients use, with ordinary
// OP_MSG commands on the admin database: replSetRaft carries raft's
// messages, replSetSnapshot a snapshot for a member far behind. Each peer
// has one sending goroutine and connection, so messages to it keep their
// order; a message that cannot be sent is dropped (raft sends it again)
// and raft is told the peer is unreachable. replSetRaft goes flagged
// moreToCome, with no reply: the next batch leaves without waiting for
// the member to have read the last, as a stream, and raft's own
// acknowledgements say what arrived.
type transport struct {
	rs    *Replica
	mu    sync.Mutex
	peers map[uint64]*peer
	stop  chan struct{}
	wg    sync.WaitGroup
}

type peer struct {
	t    *transport
	id   uint64
	addr atomic.Pointer[string]
	q    chan *pb.Message
	conn *memberConn
}

// peerQueue bounds the messages waiting for one peer; more are dropped.
const peerQueue = 4096

// dialTimeout bounds a connection attempt to a member.
const dialTimeout = time.Second

func newTransport(rs *Replica) *transport {
	return &transport{rs: rs, peers: map[uint64]*peer{}, stop: make(chan struct{})}
}

// setAddr records where member id listens.
func (t *transport) setAddr(id uint64, addr string) {
	p := t.peer(id)
	if cur := p.addr.Load(); cur == nil || *cur != addr {
		p.addr.Store(&addr)
	}
}

func (t *transport) peer(id uint64) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.peers[id]
	if !ok {
		p = &peer{t: t, id: id, q: make(chan *pb.Message, peerQueue)}
		t.peers[id] = p
		t.wg.Add(1)
		go p.run()
	}
	return p
}

func (t *transport) close() {
	close(t.stop)
	t.wg.Wait()
}

// send queues raft's outgoing messages.
func (t *transport) send(msgs []*pb.Message) {
	for _, m := range msgs {
		if _, cut := t.rs.partitioned.Load(m.GetTo()); cut {
			continue
		}
		if m.GetType() == pb.MessageType_MsgSnap {
			go t.sendSnapshot(m)
			continue
		}
		select {
		case t.peer(m.GetTo()).q <- m:
		default:
			t.rs.node().reportUnreachable(m.GetTo())
		}
	}
}

func (p *peer) run() {
	defer p.t.wg.Done()
	for {
		var m *pb.Message
		select {
		case <-p.t.stop:
			p.closeConn()
			return
		case m = <-p.q:
		}
		batch := []*pb.Message{m}
		for len(batch) < 256 {
			select {
			case m = <-p.q:
				batch = append(batch, m)
				continue
			default:
			}
			break
		}
		if err := p.deliver(batch); err != nil {
			p.closeConn()
			if n := p.t.rs.node(); n != nil {
				n.reportUnreachable(p.id)
			}
			p.pause()
		}
	}
}

func (p *peer) pause() {
	select {
	case <-p.t.stop:
	case <-time.After(50 * time.Millisecond):
	}
}

func (p *peer) closeConn() {
	if p.conn != nil {
		p.conn.close()
		p.conn = nil
	}
}

func (p *peer) deliver(batch []*pb.Message) error {
	msgs := make(bson.A, 0, len(batch))
	for _, m := range batch {
		raw, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		msgs = append(msgs, bson.Binary{Data: raw})
	}
	cmd := p.t.rs.memberCommand("replSetRaft", p.id)
	cmd = append(cmd, bson.E{Key: "msgs", Value: msgs})
	if p.conn == nil {
		addr := p.addr.Load()
		if addr == nil {
			return fmt.Errorf("repl: no address for member %d", p.id)
		}
		c, err := p.t.dialMember(*addr)
		if err != nil {
			return err
		}
		p.conn = c
	}
	return p.conn.send(cmd)
}

// memberConn is a client connection from one member to another.
type memberConn struct {
	nc     net.Conn
	r      *wire.Reader
	nextID int32
}

// Dialer connects to another member: over TLS and authenticated with the
// keyFile when the set runs with them (see app), plain TCP otherwise.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

func plainDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (t *transport) dialMember(addr string) (*memberConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	nc, err := t.rs.cfg.Dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("repl: connect to member %s: %w", addr, err)
	}
	return &memberConn{nc: nc, r: wire.NewReader(nc, wire.NewCodec())}, nil
}

// callTimeout bounds one request between members.
const callTimeout = 10 * time.Second

func (c *memberConn) call(cmd bson.D) (bson.D, error) {
	body, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	c.nextID++
	_ = c.nc.SetDeadline(time.Now().Add(callTimeout))
	if _, err := c.nc.Write(wire.AppendMsg(nil, c.nextID, 0, 0, body)); err != nil {
		return nil, err
	}
	msg, err := c.r.ReadMessage()
	if err != nil {
		return nil, err
	}
	reply, err := msg.Command()
	if err != nil {
		return nil, err
	}
	if ok, _ := lookupNumber(reply, "ok"); ok != 1 {
		return reply, fmt.Errorf("repl: member refused %s: %v", cmd[0].Key, reply)
	}
	return reply, nil
}

// send writes cmd flagged moreToCome: the member runs it and answers
// nothing.
func (c *memberConn) send(cmd bson.D) error {
	body, err := bson.Marshal(cmd)
	if err != nil {
		return err
	}
	c.nextID++
	_ = c.nc.SetWriteDeadline(time.Now().Add(callTimeout))
	_, err = c.nc.Write(wire.AppendMsg(nil, c.nextID, 0, wire.FlagMoreToCome, body))
	return err
}

func (c *memberConn) close() { _ = c.nc.Close() }

func lookupNumber(d bson.D, key string) (float64, bool) {
	for _, e := range d {
		if e.Key != key {
			continue
		}
		switch v := e.Value.(type) {
		case float64:
			return v, true
		case int32:
			return float64(v), true
		case int64:
			return float64(v), true
		}
	}
	return 0, false
}

// sendSnapshot streams this member's data to the member raft wants to
// send a snapshot to, then the snapshot message itself, whose metadata
// names the applied state the data is at.
func (t *transport) sendSnapshot(m *pb.Message) {
	n := t.rs.node()
	err := t.streamSnapshot(m)
	if err != nil {
		t.rs.cfg.Logger.Warn("sending a snapshot to a member failed", "member", m.GetTo()-1, "err", err)
	} else {
		t.rs.snapshotsSent.Add(1)
		t.rs.cfg.Logger.Info("sent a snapshot to a member", "member", m.GetTo()-1)
	}
	if n != nil {
		n.reportSnapshot(m.GetTo(), err == nil)
	}
}

func (t *transport) streamSnapshot(m *pb.Message) error {
	addr := t.peer(m.GetTo()).addr.Load()
	if addr == nil {
		return errors.New("no address")
	}
	c, err := t.dialMember(*addr)
	if err != nil {
		return err
	}
	defer c.close()
	snap := t.rs.cfg.Base.NewSnapshot()
	defer snap.Close()
	a, err := readApplied(snap)
	if err != nil {
		return err
	}
	if _, err := c.call(t.snapshotCommand(m.GetTo(), "begin")); err != nil {
		return err
	}
	err = readSnapshot(snap, func(kvs [][]byte) error {
		items := make(bson.A, len(kvs))
		for i, b := range kvs {
			items[i] = bson.Binary{Data: b}
		}
		_, err := c.call(append(t.snapshotCommand(m.GetTo(), "data"), bson.E{Key: "kvs", Value: items}))
		return err
	})
	if err != nil {
		return err
	}
	raw, err := proto.Marshal(snapshotMessage(m, a))
	if err != nil {
		return err
	}
	_, err = c.call(append(t.snapshotCommand(m.GetTo(), "end"), bson.E{Key: "msg", Value: bson.Binary{Data: raw}}))
	return err
}

func (t *transport) snapshotCommand(to uint64, phase string) bson.D {
	return append(t.rs.memberCommand("replSetSnapshot", to), bson.E{Key: "phase", Value: phase})
}

// snapshotMessage is raft's snapshot message m with the metadata of the
// applied state a, which is what the streamed data holds.
func snapshotMessage(m *pb.Message, a applied) *pb.Message {
	msg := proto.Clone(m).(*pb.Message)
	msg.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(a.index), Term: proto.Uint64(a.term), ConfState: a.conf}}
	return msg
}
