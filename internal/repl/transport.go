package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/bsonutil"
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
	// connEnded is closed once the member ended conn (its process
	// exited, or it closed the connection): see watchEnd.
	connEnded chan struct{}
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

// dropEndedConn closes conn if the member already ended it, so that the
// next batch goes on a new connection rather than into the dead one.
func (p *peer) dropEndedConn() {
	if p.conn == nil {
		return
	}
	select {
	case <-p.connEnded:
		p.closeConn()
	default:
	}
}

// watchEnd reads nc until it ends and then closes the channel it returns.
// The member never answers on this connection (replSetRaft goes
// moreToCome), so nothing else would notice that it is gone: after a
// member restarted, the next batch to it was written without error into
// the connection to its old process and lost, and a lost vote or vote
// request is sent again only an election timeout later (a failover's
// election took two or three rounds).
func watchEnd(nc net.Conn) chan struct{} {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, nc)
	}()
	return ended
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
	p.dropEndedConn()
	if p.conn == nil {
		addr := p.addr.Load()
		if addr == nil {
			return fmt.Errorf("repl: no address for member %d", p.id)
		}
		c, err := p.t.dialMember(*addr)
		if err != nil {
			return err
		}
		p.conn, p.connEnded = c, watchEnd(c.nc)
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

// memberCommand starts a command from this member to member to.
func (rs *Replica) memberCommand(name string, to uint64) bson.D {
	return bson.D{
		{Key: name, Value: int32(1)}, {Key: "$db", Value: "admin"}, {Key: "setName", Value: rs.cfg.SetName},
		{Key: "from", Value: int64(rs.myID)}, {Key: "fromHost", Value: rs.self()}, {Key: "to", Value: int64(to)},
		{Key: "sentAt", Value: rs.cfg.Clock.Now().UnixNano()},
	}
}

func (rs *Replica) self() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.cfg.Self
}

// memberHeader is the part of replSetRaft and replSetSnapshot that names
// who talks to whom.
type memberHeader struct {
	setName  string
	from, to uint64
	fromHost string
	sentAt   int64
}

func parseHeader(body bson.D) (memberHeader, error) {
	var h memberHeader
	for _, e := range body {
		switch e.Key {
		case "setName":
			h.setName, _ = e.Value.(string)
		case "from":
			v, _ := e.Value.(int64)
			h.from = uint64(v)
		case "to":
			v, _ := e.Value.(int64)
			h.to = uint64(v)
		case "fromHost":
			h.fromHost, _ = e.Value.(string)
		case "sentAt":
			h.sentAt, _ = e.Value.(int64)
		}
	}
	if h.from == 0 || h.to == 0 || h.fromHost == "" {
		return h, errors.New("repl: member message without from, to or fromHost")
	}
	return h, nil
}

// accept checks a message from another member and, on a member not yet in
// a set, joins the set it names with the ID it was given.
func (rs *Replica) accept(body bson.D) (*node, error) {
	h, err := parseHeader(body)
	if err != nil {
		return nil, err
	}
	if h.setName != rs.cfg.SetName {
		return nil, fmt.Errorf("repl: message for replica set %q, this member is in %q", h.setName, rs.cfg.SetName)
	}
	if _, cut := rs.partitioned.Load(h.from); cut {
		return nil, fmt.Errorf("repl: member %d is partitioned away", h.from-1)
	}
	rs.transport.setAddr(h.from, h.fromHost)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.myID == 0 {
		if err := rs.persistIdentity(h.to, nil); err != nil {
			return nil, err
		}
		rs.myID = h.to
		if err := rs.startNodeLocked(); err != nil {
			return nil, err
		}
		rs.cfg.Logger.Info("joined replica set", "set", rs.cfg.SetName, "member", h.to-1, "via", h.fromHost)
	}
	if h.to != rs.myID {
		return nil, fmt.Errorf("repl: message for member %d, this is member %d", h.to-1, rs.myID-1)
	}
	if rs.n.leaderID() == h.from && h.sentAt != 0 {
		rs.clockOffset.Store(h.sentAt - rs.cfg.Clock.Now().UnixNano())
	}
	return rs.n, nil
}

// Partition makes this member drop every message to and from the members
// at hosts (none: heal). It is a fault for tests, reached only through a
// test command.
func (rs *Replica) Partition(hosts []string) {
	rs.partitioned.Clear()
	c := rs.Config()
	if c == nil {
		return
	}
	for _, h := range hosts {
		if m, ok := c.memberByHost(h); ok {
			rs.partitioned.Store(m.RaftID(), true)
		}
	}
}

// ClockOffset is the primary's clock minus this member's, as last seen.
func (rs *Replica) ClockOffset() time.Duration { return time.Duration(rs.clockOffset.Load()) }

// Receive takes a replSetRaft command's messages.
func (rs *Replica) Receive(body bson.D) error {
	n, err := rs.accept(body)
	if err != nil {
		return err
	}
	for _, e := range body {
		if e.Key != "msgs" {
			continue
		}
		arr, _ := e.Value.(bson.A)
		for _, item := range arr {
			bin, _ := item.(bson.Binary)
			m := &pb.Message{}
			if err := proto.Unmarshal(bin.Data, m); err != nil {
				return fmt.Errorf("repl: decode raft message: %w", err)
			}
			_ = n.step(m) // a message raft refuses (stale term) is dropped
		}
	}
	return nil
}

// ReceiveSnapshot takes one replSetSnapshot command.
func (rs *Replica) ReceiveSnapshot(body bson.D) error {
	n, err := rs.accept(body)
	if err != nil {
		return err
	}
	phase, _ := lookupString(body, "phase")
	switch phase {
	case "begin":
		return stageBegin(rs.cfg.Base)
	case "data":
		v, _ := bsonutil.Field(body, "kvs")
		arr, _ := v.(bson.A)
		kvs := make([][]byte, len(arr))
		for i, item := range arr {
			bin, _ := item.(bson.Binary)
			kvs[i] = bin.Data
		}
		return stageChunk(rs.cfg.Base, kvs)
	case "end":
		v, _ := bsonutil.Field(body, "msg")
		bin, _ := v.(bson.Binary)
		m := &pb.Message{}
		if err := proto.Unmarshal(bin.Data, m); err != nil {
			return err
		}
		return n.step(m)
	}
	return fmt.Errorf("repl: unknown snapshot phase %q", phase)
}

func lookupString(d bson.D, key string) (string, bool) {
	v, ok := bsonutil.Field(d, key)
	s, _ := v.(string)
	return s, ok
}
