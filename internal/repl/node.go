package repl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
)

// Errors a write or read may end with; the command layer gives them
// MongoDB's codes.
var (
	// ErrNotPrimary: this member cannot take writes now.
	ErrNotPrimary = errors.New("repl: not primary")
	// ErrStateChange: the member stopped being primary while the operation
	// waited; it may or may not have been applied.
	ErrStateChange = errors.New("repl: operation interrupted by a replica set state change")
	// ErrShutdown: the member is shutting down.
	ErrShutdown = errors.New("repl: shutting down")
)

// nodeConfig is what the raft node needs.
type nodeConfig struct {
	ID            uint64
	Tick          time.Duration
	ElectionTicks int
	// RetainEntries is how many applied entries stay in the log before it
	// is compacted (followers further behind get a snapshot).
	RetainEntries uint64
	Clock         clock.Clock
	Logger        *slog.Logger
	Changes       *changestream.Signal
}

// node runs one member's raft: it persists the log, sends messages,
// applies committed entries and wakes the operations waiting on them.
type node struct {
	cfg          nodeConfig
	base         Base
	ls           *logStore
	send         func([]*pb.Message)
	hooks        Hooks
	onCfg        func([]byte) // a config entry was applied
	onConfChange func()       // a membership change was applied

	mu       sync.Mutex // guards rn and the fields below it
	rn       *raft.RawNode
	closed   bool // no more messages, proposals or ticks
	leader   uint64
	role     raft.StateType
	term     uint64
	writable bool
	lastTS   changestream.Timestamp
	// clusterTime is the highest cluster time gossiped to this member
	// (AdvanceClusterTime): the next stamp comes after it.
	clusterTime changestream.Timestamp
	waiters     map[uint64]chan error
	// props are the stamped proposals not yet handed to raft: the raft
	// loop hands them over together, one raft append for all of them,
	// whenever the log writer has no append of this member's in hand
	// (flushProposals). Without that, each write would be its own
	// append, message to each follower and acknowledgement.
	props []propWait
	// background are the TTL monitor's expiry proposals not yet handed
	// to raft. They follow the clients' proposals, at most
	// backgroundInLog of them in the log unapplied (backgroundLog), and
	// are stamped when handed over: a storm's deletions then never stand
	// in the log ahead of more than that many batches' worth of a
	// client's write, whatever the monitor queues (docs/design/0007).
	background    []propWait
	backgroundLog map[uint64]bool // background proposals in raft, not yet applied
	reads         map[string]*readWait
	pending       []*readWait // reads whose index is known, waiting for apply

	applied    atomic.Uint64
	appliedTS  atomic.Uint64 // Timestamp packed T<<32|I
	appliedWal atomic.Int64
	onChange   func() // leader or role changed (topologyVersion)
	confState  *pb.ConfState
	appliedMu  sync.Mutex
	applyCond  *sync.Cond
	proposalID atomic.Uint64

	// raft runs with asynchronous storage writes: the raft loop only
	// sends, and hands the log's appends to one goroutine (appendLoop)
	// and the committed entries to another (applyLoop), each in order,
	// as raft's local messages. The raft loop goes on stepping messages
	// and proposals while the log is synced, so a leader counts its
	// followers' acknowledgements during its own fsync, and appends that
	// queue during one fsync share the next.
	appendc    chan *pb.Message
	appendDone chan struct{}
	persistErr atomic.Bool  // persisting failed: nothing more is acknowledged
	appending  atomic.Int64 // MsgStorageAppends handed to the log writer, not yet written
	applyq     *applyInbox
	applyDone  chan struct{}
	applyErr   atomic.Bool // applying failed: nothing later is applied

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// appendQueue bounds raft's local messages waiting for the log writer:
// past it, the raft loop waits. What waits for the applier raft bounds
// itself: it hands out no more committed entries once maxApplying bytes
// of them are not yet applied (raft's MaxCommittedSizePerReady; the last
// one handed out may cross it), and the raft loop never waits for the
// applier (applyInbox).
const (
	appendQueue = 256
	maxApplying = 256 << 10
)

func newNode(cfg nodeConfig, base Base, ls *logStore, hooks Hooks) (*node, error) {
	a, err := readApplied(base)
	if err != nil {
		return nil, err
	}
	n := &node{
		cfg: cfg, base: base, ls: ls, hooks: hooks,
		waiters: map[uint64]chan error{}, reads: map[string]*readWait{}, backgroundLog: map[uint64]bool{},
		confState: a.conf, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		appendc: make(chan *pb.Message, appendQueue), appendDone: make(chan struct{}),
		applyq: newApplyInbox(), applyDone: make(chan struct{}),
	}
	n.applyCond = sync.NewCond(&n.appliedMu)
	n.applied.Store(a.index)
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	n.proposalID.Store(binary.BigEndian.Uint64(seed[:]) >> 1)
	rn, err := raft.NewRawNode(&raft.Config{
		ID: cfg.ID, ElectionTick: cfg.ElectionTicks, HeartbeatTick: 1, Storage: ls, Applied: a.index,
		MaxSizePerMsg: 4 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30, MaxCommittedSizePerReady: maxApplying,
		CheckQuorum: true, PreVote: true, ReadOnlyOption: raft.ReadOnlySafe, AsyncStorageWrites: true,
		DisableProposalForwarding: true, StepDownOnRemoval: true,
		Logger: raftLogger{cfg.Logger.With("component", "raft")},
	})
	if err != nil {
		return nil, fmt.Errorf("repl: start raft: %w", err)
	}
	n.rn = rn
	return n, nil
}

// bootstrap makes a new set whose first members are peers.
func (n *node) bootstrap(peers []uint64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	ps := make([]raft.Peer, len(peers))
	for i, id := range peers {
		ps[i] = raft.Peer{ID: id}
	}
	return n.rn.Bootstrap(ps)
}

func (n *node) start(send func([]*pb.Message)) {
	n.send = send
	go n.tickLoop()
	go n.appendLoop()
	go n.applyLoop()
	go n.readyLoop()
}

func (n *node) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	<-n.done
	close(n.appendc) // the raft loop, its only sender, has stopped
	<-n.appendDone
	n.applyq.close() // the raft loop and the log writer, its senders, have stopped
	<-n.applyDone
	n.mu.Lock()
	n.failWaiters(ErrShutdown)
	n.mu.Unlock()
}

func (n *node) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *node) tickLoop() {
	t := time.NewTicker(n.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.mu.Lock()
			if !n.closed {
				n.rn.Tick()
			}
			n.mu.Unlock()
			n.poke()
		}
	}
}

// step hands a message from another member to raft.
func (n *node) step(m *pb.Message) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrShutdown
	}
	err := n.rn.Step(m)
	n.mu.Unlock()
	n.poke()
	return err
}

func (n *node) readyLoop() {
	defer close(n.done)
	for {
		select {
		case <-n.stop:
			return
		case <-n.wake:
		}
		n.flushProposals()
		for n.handleReady() {
		}
	}
}

// handleReady takes one Ready from raft: it sends the messages for other
// members at once and hands the local ones to the log writer and the
// applier. raft puts every message that may only leave once something is
// durable (a follower's acknowledgement, a vote) among the responses of
// the log writer's message, so a leader sends its appends while it writes
// them itself. It reports whether there was anything to do.
func (n *node) handleReady() bool {
	n.mu.Lock()
	if !n.rn.HasReady() {
		n.mu.Unlock()
		return false
	}
	rd := n.rn.Ready()
	n.noteSoftState(rd.SoftState)
	n.noteReadStates(rd.ReadStates)
	n.mu.Unlock()
	remote := make([]*pb.Message, 0, len(rd.Messages))
	var local []*pb.Message
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case raft.LocalAppendThread, raft.LocalApplyThread:
			local = append(local, m)
		default:
			remote = append(remote, m)
		}
	}
	n.send(remote)
	for _, m := range local {
		if m.GetTo() == raft.LocalAppendThread {
			n.appending.Add(1)
			n.appendc <- m
		} else if !n.applyErr.Load() {
			n.applyq.push(applyReq{m: m})
		}
	}
	return true
}

func (n *node) leaderID() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader
}

// noteSoftState follows leadership; n.mu is held.
func (n *node) noteSoftState(ss *raft.SoftState) {
	if ss == nil {
		return
	}
	if ss.Lead == n.leader && ss.RaftState == n.role {
		return
	}
	wasLeader := n.role == raft.StateLeader
	n.leader, n.role = ss.Lead, ss.RaftState
	n.term = n.rn.BasicStatus().HardState.GetTerm()
	if n.onChange != nil {
		go n.onChange()
	}
	if wasLeader && ss.RaftState != raft.StateLeader {
		n.demoteLocked()
	}
}

func (n *node) maybePromote(term uint64) {
	n.mu.Lock()
	promote := n.role == raft.StateLeader && !n.writable && term == n.term
	if promote {
		n.writable = true
		if ts := n.appliedTimestamp(); ts.After(n.lastTS) {
			n.lastTS = ts
		}
	}
	n.mu.Unlock()
	if promote {
		n.hooks.Promoted()
	}
}

func (n *node) demoteLocked() {
	wasWritable := n.writable
	n.writable = false
	n.failWaiters(ErrStateChange)
	if wasWritable {
		go n.hooks.Demoted()
	}
}

// failWaiters ends every waiting proposal and read with err; n.mu is held.
func (n *node) failWaiters(err error) {
	for id, ch := range n.waiters {
		ch <- err
		delete(n.waiters, id)
	}
	for k, r := range n.reads {
		r.done <- err
		delete(n.reads, k)
	}
	for _, r := range n.pending {
		r.done <- err
	}
	n.pending = nil
	n.props = nil // their waiters are gone; their stamps belong to the old term
	n.background = nil
	clear(n.backgroundLog)
}

// status is a copy of what hello and replSetGetStatus report.
type status struct {
	id, leader, term uint64
	role             raft.StateType
	writable         bool
	applied, commit  uint64
	progress         map[uint64]uint64 // leader only: each member's match
}

// status is the zero status (no leader, not writable) on a member whose
// raft has not started: app starts it late on a full disk.
func (n *node) status() status {
	if n == nil {
		return status{}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.rn.Status()
	s := status{
		id: n.cfg.ID, leader: n.leader, term: st.HardState.GetTerm(), role: n.role, writable: n.writable,
		applied: n.applied.Load(), commit: st.HardState.GetCommit(),
	}
	if n.role == raft.StateLeader {
		s.progress = map[uint64]uint64{}
		for id, pr := range st.Progress {
			s.progress[id] = pr.Match
		}
	}
	return s
}

func (n *node) reportUnreachable(id uint64) {
	n.mu.Lock()
	if !n.closed {
		n.rn.ReportUnreachable(id)
	}
	n.mu.Unlock()
}

func (n *node) reportSnapshot(id uint64, ok bool) {
	status := raft.SnapshotFinish
	if !ok {
		status = raft.SnapshotFailure
	}
	n.mu.Lock()
	if !n.closed {
		n.rn.ReportSnapshot(id, status)
	}
	n.mu.Unlock()
	n.poke()
}
