package repl

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
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

// Base is the engine under the replicated one: pebblestore, which can
// rebuild a batch from its repr.
type Base interface {
	storage.Engine
	// AppendRepr adds the writes of repr, a batch's encoded writes (see
	// pebblestore), to b.
	AppendRepr(b storage.Batch, repr []byte) error
}

// Hooks tell the layers above about entries this member applied that it
// did not itself propose: a secondary keeps its in-memory state with them.
type Hooks interface {
	// Applied is called after a write entry is in storage.
	Applied(deltas []CountDelta, catalogChanged bool)
	// Reloaded is called after a snapshot replaced everything.
	Reloaded()
	// Expirer applies compact expiries; on every member, the proposer too.
	Expirer
	// Promoted is called when this member becomes a writable primary,
	// Demoted when it stops being one.
	Promoted()
	Demoted()
}

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
	waiters  map[uint64]chan error
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
	applyc     chan applyReq
	applyDone  chan struct{}
	applyErr   atomic.Bool // applying failed: nothing later is applied

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// appendQueue and applyQueue bound raft's local messages waiting for the
// log writer and the applier: past them, the raft loop waits. raft
// itself bounds the bytes being applied (MaxCommittedSizePerReady).
const (
	appendQueue = 256
	applyQueue  = 4
)

// applyReq is a MsgStorageApply for the applier, or a barrier: done is
// closed once everything handed to the applier before it is applied.
type applyReq struct {
	m    *pb.Message
	done chan struct{}
}

// backgroundInLog bounds the background proposals in the log and not yet
// applied: one applies while the next replicates, so the deletions keep
// the apply busy and a client's write waits for at most two batches.
const backgroundInLog = 2

// propWait is a proposal waiting for the raft loop.
type propWait struct {
	id   uint64
	data []byte
}

type readWait struct {
	index uint64
	done  chan error
}

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
		applyc: make(chan applyReq, applyQueue), applyDone: make(chan struct{}),
	}
	n.applyCond = sync.NewCond(&n.appliedMu)
	n.applied.Store(a.index)
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	n.proposalID.Store(binary.BigEndian.Uint64(seed[:]) >> 1)
	rn, err := raft.NewRawNode(&raft.Config{
		ID: cfg.ID, ElectionTick: cfg.ElectionTicks, HeartbeatTick: 1, Storage: ls, Applied: a.index,
		MaxSizePerMsg: 4 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30,
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
	close(n.applyc) // the raft loop and the log writer, its senders, have stopped
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

func (n *node) leaderID() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader
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
			n.applyc <- applyReq{m: m}
		}
	}
	return true
}

// appendLoop is the log writer: it persists raft's MsgStorageAppends in
// order, as many as are waiting in one synced batch, then delivers their
// responses. A snapshot is installed alone, once the applier has applied
// everything before it.
func (n *node) appendLoop() {
	defer close(n.appendDone)
	var pending []*pb.Message
	for m := range n.appendc {
		pending = append(pending[:0], m)
	drain:
		for len(pending) < appendQueue {
			select {
			case m, ok := <-n.appendc:
				if !ok {
					break drain
				}
				pending = append(pending, m)
			default:
				break drain
			}
		}
		for len(pending) > 0 {
			k := snapshotRun(pending)
			n.persistRun(pending[:k])
			pending = pending[k:]
		}
	}
}

// snapshotRun is how many of ms go to the log together: a message with a
// snapshot alone, else those before the next one with a snapshot.
func snapshotRun(ms []*pb.Message) int {
	for i, m := range ms {
		if !raft.IsEmptySnap(m.GetSnapshot()) {
			return max(i, 1)
		}
	}
	return len(ms)
}

// persistRun writes ms to the log (and a snapshot, alone in its run) and
// delivers their responses once that is durable. After a failure nothing
// more is written or acknowledged: this member's raft stops.
func (n *node) persistRun(ms []*pb.Message) {
	if n.persistErr.Load() {
		return
	}
	if err := n.persistMsgs(ms); err != nil {
		n.persistErr.Store(true)
		n.cfg.Logger.Error("raft: cannot persist the log; stopping this member's raft", "err", err)
		return
	}
	if n.appending.Add(-int64(len(ms))) == 0 {
		n.poke() // proposals may be waiting for the log writer (flushProposals)
	}
	var remote []*pb.Message
	for _, m := range ms {
		for _, r := range m.GetResponses() {
			if r.GetTo() != n.cfg.ID {
				remote = append(remote, r)
			}
		}
	}
	n.send(remote)
	for _, m := range ms {
		for _, r := range m.GetResponses() {
			if r.GetTo() == n.cfg.ID {
				_ = n.step(r)
			}
		}
	}
}

func (n *node) persistMsgs(ms []*pb.Message) error {
	as := make([]logAppend, 0, len(ms))
	n.ls.mu.Lock()
	term, vote := n.ls.hardState.GetTerm(), n.ls.hardState.GetVote()
	n.ls.mu.Unlock()
	sync := false
	for _, m := range ms {
		if snap := m.GetSnapshot(); !raft.IsEmptySnap(snap) {
			n.drainApplier()
			if err := n.installSnapshot(snap); err != nil {
				return err
			}
		}
		a := logAppend{ents: m.GetEntries()}
		if m.Term != nil {
			a.hs = &pb.HardState{Term: m.Term, Vote: m.Vote, Commit: m.Commit}
		}
		as = append(as, a)
		// What raft's synchronous interface calls MustSync: entries, a
		// term or a vote. A commit index alone need not be durable, and
		// everything before it in the log is, written and synced in
		// order before it.
		if len(a.ents) > 0 || a.hs != nil && (a.hs.GetTerm() != term || a.hs.GetVote() != vote) {
			sync = true
		}
		if a.hs != nil {
			term, vote = a.hs.GetTerm(), a.hs.GetVote()
		}
	}
	return n.ls.appendAll(as, sync)
}

// drainApplier waits until the applier has applied everything handed to it:
// a snapshot replaces what it would apply to.
func (n *node) drainApplier() {
	done := make(chan struct{})
	n.applyc <- applyReq{done: done}
	<-done
}

// applyLoop applies the committed entries the raft loop hands it, in
// order, as many messages' worth as are waiting at once, until the node
// closes. After a failure it applies nothing more: a later entry may
// depend on the one that failed.
func (n *node) applyLoop() {
	defer close(n.applyDone)
	var msgs []*pb.Message
	for req := range n.applyc {
		msgs = msgs[:0]
		var barrier chan struct{}
		for {
			if req.done != nil {
				barrier = req.done
				break
			}
			msgs = append(msgs, req.m)
			var ok bool
			select {
			case req, ok = <-n.applyc:
			default:
			}
			if !ok {
				break
			}
		}
		n.applyMsgs(msgs)
		if barrier != nil {
			close(barrier)
		}
	}
}

// applyMsgs applies the entries of raft's MsgStorageApplys and then
// delivers their responses to raft.
func (n *node) applyMsgs(msgs []*pb.Message) {
	if len(msgs) == 0 || n.applyErr.Load() {
		return
	}
	var ents []*pb.Entry
	for _, m := range msgs {
		ents = append(ents, m.GetEntries()...)
	}
	if err := n.applyEntries(ents); err != nil {
		n.applyErr.Store(true)
		n.cfg.Logger.Error("raft: cannot apply committed entries; this member applies nothing more until restarted", "err", err)
		return
	}
	for _, m := range msgs {
		for _, r := range m.GetResponses() {
			_ = n.step(r)
		}
	}
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

// flushProposals hands the waiting proposals to raft as one append, once
// the log writer has written this member's last one: proposals gather
// while it syncs, and share the next sync. The clients' proposals go
// first, then as many background ones as the log has room for. A
// proposal raft refuses (no longer the leader) fails as not applied.
func (n *node) flushProposals() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.appending.Load() > 0 {
		return
	}
	bg := n.takeBackground()
	if len(n.props)+len(bg) == 0 {
		return
	}
	ents := make([]*pb.Entry, 0, len(n.props)+len(bg))
	for _, p := range n.props {
		ents = append(ents, &pb.Entry{Data: p.data})
	}
	for _, p := range bg {
		ents = append(ents, &pb.Entry{Data: p.data})
	}
	err := n.rn.Step(&pb.Message{Type: pb.MessageType_MsgProp.Enum(), From: proto.Uint64(n.cfg.ID), Entries: ents})
	if err != nil {
		n.refuse(n.props, err)
		n.refuse(bg, err)
		for _, p := range bg {
			delete(n.backgroundLog, p.id)
		}
	}
	clear(n.props)
	n.props = n.props[:0]
}

// takeBackground stamps and returns the background proposals the log has
// room for (backgroundInLog), after the clients' stamped ones; n.mu is
// held.
func (n *node) takeBackground() []propWait {
	room := min(backgroundInLog-len(n.backgroundLog), len(n.background))
	if room <= 0 {
		return nil
	}
	out := slices.Clone(n.background[:room])
	for _, p := range out {
		putStamp(p.data, n.nextTimestamp(), n.cfg.Clock.Now().UnixMilli())
		n.backgroundLog[p.id] = true
	}
	n.background = slices.Delete(n.background, 0, room)
	return out
}

// refuse fails the waiters of props with err, raft's refusal; n.mu is
// held.
func (n *node) refuse(props []propWait, err error) {
	for _, p := range props {
		if ch, ok := n.waiters[p.id]; ok {
			ch <- fmt.Errorf("%w: %v", ErrNotPrimary, err)
			delete(n.waiters, p.id)
		}
	}
}

// applyEntries applies committed entries in groups, each one storage
// batch with the applied state moved to its last entry: one commit for
// many writes. A group ends after an entry that changes the catalog, the
// config or the membership, so the layers above reload after exactly
// that entry.
func (n *node) applyEntries(ents []*pb.Entry) error {
	for len(ents) > 0 {
		k := groupEnd(ents)
		if err := n.applyGroup(ents[:k]); err != nil {
			return err
		}
		ents = ents[k:]
	}
	n.appliedMu.Lock()
	n.applyCond.Broadcast()
	n.appliedMu.Unlock()
	n.releaseReads()
	n.maybeCompact()
	return nil
}

// groupEnd is how many of ents go in the next group. An entry with
// expiries starts a group: its member reads, from storage, the deletion
// records of the documents it expires, which the entries before it may
// have changed.
func groupEnd(ents []*pb.Entry) int {
	for i, e := range ents {
		if e.GetType() != pb.EntryNormal {
			return i + 1
		}
		kind, flags, ok := headerOf(e.GetData())
		if !ok {
			continue
		}
		if flags&flagExpiry != 0 && i > 0 {
			return i
		}
		if kind != kindWrite || flags&flagCatalog != 0 {
			return i + 1
		}
	}
	return len(ents)
}

func (n *node) applyGroup(ents []*pb.Entry) error {
	b := n.base.NewBatch()
	defer b.Close()
	decoded := make([]*entry, 0, len(ents))
	confChanged := false
	var publish []func()
	for _, e := range ents {
		ent, pub, err := n.stage(b, e)
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.GetIndex(), err)
		}
		if ent != nil {
			decoded = append(decoded, ent)
		}
		if pub != nil {
			publish = append(publish, pub)
		}
		confChanged = confChanged || e.GetType() != pb.EntryNormal
	}
	last := ents[len(ents)-1]
	if err := n.commitApplied(b, last); err != nil {
		return err
	}
	for _, pub := range publish {
		pub()
	}
	for _, ent := range decoded {
		n.noteApplied(ent)
	}
	n.cfg.Changes.Notify()
	n.maybePromote(last.GetTerm())
	if confChanged && n.onConfChange != nil {
		n.onConfChange()
	}
	return nil
}

// stage adds e's effects to b; it returns the decoded entry (nil for
// raft's own entries) and, for an entry with expiries, what makes their
// counts known once b is in storage.
func (n *node) stage(b storage.Batch, e *pb.Entry) (*entry, func(), error) {
	switch e.GetType() {
	case pb.EntryConfChange, pb.EntryConfChangeV2:
		return nil, nil, n.applyConfChange(e)
	}
	if len(e.GetData()) == 0 {
		return nil, nil, nil // the empty entry a new leader appends
	}
	ent, err := decodeEntry(e.GetData())
	if err != nil {
		return nil, nil, err
	}
	switch ent.kind {
	case kindWrite:
		pub, err := n.stageWrite(b, ent)
		return ent, pub, err
	case kindConfig:
		return ent, nil, b.Set(configKey, ent.payload)
	}
	return ent, nil, nil
}

// stageWrite adds a write entry's documents, expiries and events to b.
func (n *node) stageWrite(b storage.Batch, ent *entry) (func(), error) {
	if len(ent.payload) > 0 {
		if err := n.base.AppendRepr(b, ent.payload); err != nil {
			return nil, err
		}
	}
	events := ent.events
	var publish func() // nil without expiries
	if ent.expiries.n > 0 {
		keys, err := ent.expiries.keys()
		if err != nil {
			return nil, err
		}
		more, pub, err := n.hooks.ApplyExpiries(b, keys)
		if err != nil {
			return nil, fmt.Errorf("apply expiries: %w", err)
		}
		events, publish = append(events[:len(events):len(events)], more...), pub
	}
	return publish, changestream.WriteEvents(b, ent.ts, ent.wall, events)
}

// commitApplied commits b with the applied state moved to e. Unsynced: the
// log already holds e durably, and a restart applies it again.
func (n *node) commitApplied(b storage.Batch, e *pb.Entry) error {
	n.mu.Lock()
	a := applied{index: e.GetIndex(), term: e.GetTerm(), conf: n.confState}
	n.mu.Unlock()
	if err := b.Set(appliedKey, a.encode()); err != nil {
		return err
	}
	if err := b.Commit(false); err != nil {
		return err
	}
	n.applied.Store(e.GetIndex())
	return nil
}

// noteApplied wakes the proposer of ent, or, when nobody waits for it,
// tells the layers above what changed.
func (n *node) noteApplied(ent *entry) {
	if ent.ts != (changestream.Timestamp{}) {
		n.appliedTS.Store(uint64(ent.ts.T)<<32 | uint64(ent.ts.I))
		n.appliedWal.Store(ent.wall)
	}
	n.mu.Lock()
	ch, mine := n.waiters[ent.proposal]
	delete(n.waiters, ent.proposal)
	wasBackground := n.backgroundLog[ent.proposal]
	delete(n.backgroundLog, ent.proposal)
	n.mu.Unlock()
	if wasBackground {
		n.poke() // room in the log for the next background proposal
	}
	if ent.kind == kindConfig && n.onCfg != nil {
		n.onCfg(ent.payload)
	}
	if mine {
		ch <- nil
		return
	}
	if ent.kind == kindWrite {
		n.hooks.Applied(ent.deltas, ent.flags&flagCatalog != 0)
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

func (n *node) applyConfChange(e *pb.Entry) error {
	var cc pb.ConfChangeI
	if e.GetType() == pb.EntryConfChange {
		var c pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &c); err != nil {
			return err
		}
		cc = &c
	} else {
		var c pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &c); err != nil {
			return err
		}
		cc = &c
	}
	n.mu.Lock()
	n.confState = n.rn.ApplyConfChange(cc)
	n.mu.Unlock()
	return nil
}

// propose hands ent to raft on the primary and waits until this member
// has applied it.
func (n *node) propose(ctx context.Context, ent *entry) error {
	ch, err := n.startProposal(ent, false)
	if err != nil {
		return err
	}
	return n.awaitProposal(ctx, ent.proposal, ch)
}

// startProposal stamps ent and hands it to raft; ch hears once this member
// has applied it. A background proposal is stamped later, when it goes
// to raft behind the clients' (flushProposals).
func (n *node) startProposal(ent *entry, background bool) (chan error, error) {
	ch := make(chan error, 1)
	n.mu.Lock()
	if !n.writable || n.closed {
		n.mu.Unlock()
		return nil, ErrNotPrimary
	}
	ent.proposal = n.proposalID.Add(1)
	n.waiters[ent.proposal] = ch
	if !background {
		ent.ts, ent.wall = n.nextTimestamp(), n.cfg.Clock.Now().UnixMilli()
	}
	p := propWait{id: ent.proposal, data: ent.encode()}
	if background {
		n.background = append(n.background, p)
	} else {
		n.props = append(n.props, p)
	}
	n.mu.Unlock()
	n.poke()
	return ch, nil
}

// awaitProposal waits for the proposal's apply, or gives up with ctx (the
// outcome then unknown).
func (n *node) awaitProposal(ctx context.Context, proposal uint64, ch chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		n.mu.Lock()
		delete(n.waiters, proposal)
		n.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrStateChange, ctx.Err())
	}
}

// nextTimestamp is the primary's next entry stamp: seconds of its clock,
// never behind the last stamp; n.mu is held.
func (n *node) nextTimestamp() changestream.Timestamp {
	secs := uint32(n.cfg.Clock.Now().Unix())
	if secs > n.lastTS.T {
		n.lastTS = changestream.Timestamp{T: secs, I: 1}
	} else {
		n.lastTS.I++
	}
	return n.lastTS
}

func (n *node) appliedTimestamp() changestream.Timestamp {
	v := n.appliedTS.Load()
	return changestream.Timestamp{T: uint32(v >> 32), I: uint32(v)}
}

// readIndex waits until this member has applied everything committed when
// it was called, confirmed by a majority (raft's ReadIndex).
func (n *node) readIndex(ctx context.Context) error {
	var rctx [8]byte
	binary.BigEndian.PutUint64(rctx[:], n.proposalID.Add(1))
	w := &readWait{done: make(chan error, 1)}
	n.mu.Lock()
	if n.role != raft.StateLeader {
		n.mu.Unlock()
		return ErrNotPrimary
	}
	n.reads[string(rctx[:])] = w
	n.rn.ReadIndex(rctx[:])
	n.mu.Unlock()
	n.poke()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrStateChange, ctx.Err())
	}
}

// noteReadStates records the index each confirmed read must wait for;
// n.mu is held.
func (n *node) noteReadStates(states []raft.ReadState) {
	for _, rs := range states {
		w, ok := n.reads[string(rs.RequestCtx)]
		if !ok {
			continue
		}
		delete(n.reads, string(rs.RequestCtx))
		w.index = rs.Index
		n.pending = append(n.pending, w)
	}
	if len(states) > 0 {
		n.releaseReadsLocked()
	}
}

func (n *node) releaseReads() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.releaseReadsLocked()
}

func (n *node) releaseReadsLocked() {
	applied := n.applied.Load()
	kept := n.pending[:0]
	for _, w := range n.pending {
		if w.index <= applied {
			w.done <- nil
		} else {
			kept = append(kept, w)
		}
	}
	n.pending = kept
}

// maybeCompact drops applied entries beyond the retained window.
func (n *node) maybeCompact() {
	applied := n.applied.Load()
	first, _ := n.ls.FirstIndex()
	if applied < first+2*n.cfg.RetainEntries {
		return
	}
	upTo := applied - n.cfg.RetainEntries
	term, err := n.ls.Term(upTo)
	if err != nil {
		return
	}
	n.mu.Lock()
	conf := proto.Clone(n.confState).(*pb.ConfState)
	n.mu.Unlock()
	if err := n.ls.compact(upTo, term, conf); err != nil {
		n.cfg.Logger.Warn("raft: log compaction failed", "err", err)
	}
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

// transferLeadership asks raft to hand leadership to to.
func (n *node) transferLeadership(to uint64) {
	n.mu.Lock()
	n.rn.TransferLeader(to)
	n.mu.Unlock()
	n.poke()
}

// proposeConfChange proposes a membership change on the primary.
func (n *node) proposeConfChange(cc *pb.ConfChangeV2) error {
	n.mu.Lock()
	defer n.poke()
	defer n.mu.Unlock()
	if !n.writable {
		return ErrNotPrimary
	}
	return n.rn.ProposeConfChange(cc)
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
