package repl

import (
	"context"
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
	lastTS   Timestamp
	waiters  map[uint64]chan error
	reads    map[string]*readWait
	pending  []*readWait // reads whose index is known, waiting for apply

	applied    atomic.Uint64
	appliedTS  atomic.Uint64 // Timestamp packed T<<32|I
	appliedWal atomic.Int64
	onChange   func() // leader or role changed (topologyVersion)
	confState  *pb.ConfState
	appliedMu  sync.Mutex
	applyCond  *sync.Cond
	proposalID atomic.Uint64

	// Committed entries go to their own goroutine to be applied
	// (applyLoop), in order, while this one goes on persisting and
	// sending: a follower acknowledges the next entries while it applies
	// the last ones, and a large apply never holds up the log.
	applyc    chan []*pb.Entry
	applying  sync.WaitGroup // entries handed to applyLoop, not yet applied
	applyDone chan struct{}
	applyErr  atomic.Bool // applying failed: nothing later is applied

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// applyQueue bounds the Readys waiting to be applied: past it, the
// raft loop waits for the applier.
const applyQueue = 4

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
		waiters: map[uint64]chan error{}, reads: map[string]*readWait{},
		confState: a.conf, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		applyc: make(chan []*pb.Entry, applyQueue), applyDone: make(chan struct{}),
	}
	n.applyCond = sync.NewCond(&n.appliedMu)
	n.applied.Store(a.index)
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	n.proposalID.Store(binary.BigEndian.Uint64(seed[:]) >> 1)
	rn, err := raft.NewRawNode(&raft.Config{
		ID: cfg.ID, ElectionTick: cfg.ElectionTicks, HeartbeatTick: 1, Storage: ls, Applied: a.index,
		MaxSizePerMsg: 4 << 20, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum: true, PreVote: true, ReadOnlyOption: raft.ReadOnlySafe,
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
	go n.applyLoop()
	go n.readyLoop()
}

func (n *node) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	<-n.done
	close(n.applyc) // the raft loop, the only sender, has stopped
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
		for n.handleReady() {
		}
	}
}

// handleReady runs one round of raft's Ready: persist, send, hand the
// committed entries to the applier, advance. It reports whether there was
// anything to do.
func (n *node) handleReady() bool {
	n.mu.Lock()
	if !n.rn.HasReady() {
		n.mu.Unlock()
		return false
	}
	rd := n.rn.Ready()
	n.noteSoftState(rd.SoftState)
	leader := n.role == raft.StateLeader
	n.mu.Unlock()
	// A leader may send its appends while it writes them itself (raft's
	// parallel leader append); a follower answers only once its log and
	// vote are durable.
	if leader {
		n.send(rd.Messages)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		n.applying.Wait() // the snapshot replaces what they would apply to
	}
	if err := n.persist(rd); err != nil {
		n.cfg.Logger.Error("raft: cannot persist the log; stopping this member's raft", "err", err)
		return false
	}
	if !leader {
		n.send(rd.Messages)
	}
	if len(rd.CommittedEntries) > 0 && !n.applyErr.Load() {
		n.applying.Add(1)
		n.applyc <- rd.CommittedEntries
		// raft takes a membership change as made once advanced: it is
		// applied (ApplyConfChange) before raft goes on.
		if hasConfChange(rd.CommittedEntries) {
			n.applying.Wait()
		}
	}
	n.mu.Lock()
	n.noteReadStates(rd.ReadStates)
	n.rn.Advance(rd)
	n.mu.Unlock()
	return true
}

// applyLoop applies the committed entries the raft loop hands it, in
// order, until the node closes. After a failure it applies nothing more:
// a later entry may depend on the one that failed.
func (n *node) applyLoop() {
	defer close(n.applyDone)
	for ents := range n.applyc {
		if !n.applyErr.Load() {
			if err := n.applyEntries(ents); err != nil {
				n.applyErr.Store(true)
				n.cfg.Logger.Error("raft: cannot apply committed entries; this member applies nothing more until restarted", "err", err)
			}
		}
		n.applying.Done()
	}
}

func hasConfChange(ents []*pb.Entry) bool {
	for _, e := range ents {
		if e.GetType() != pb.EntryNormal {
			return true
		}
	}
	return false
}

func (n *node) persist(rd raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.installSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	return n.ls.append(rd.Entries, rd.HardState, rd.MustSync)
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
		d := e.GetData()
		if len(d) <= 25 {
			continue
		}
		if d[25]&flagExpiry != 0 && i > 0 {
			return i
		}
		if entryKind(d[0]) != kindWrite || d[25]&flagCatalog != 0 {
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
	ts := changestream.Timestamp{T: ent.ts.T, I: ent.ts.I}
	return publish, changestream.WriteEvents(b, ts, ent.wall, events)
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
	if ent.ts != (Timestamp{}) {
		n.appliedTS.Store(uint64(ent.ts.T)<<32 | uint64(ent.ts.I))
		n.appliedWal.Store(ent.wall)
	}
	n.mu.Lock()
	ch, mine := n.waiters[ent.proposal]
	delete(n.waiters, ent.proposal)
	n.mu.Unlock()
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
	ch, err := n.startProposal(ent)
	if err != nil {
		return err
	}
	return n.awaitProposal(ctx, ent.proposal, ch)
}

// startProposal stamps ent and hands it to raft; ch hears once this member
// has applied it.
func (n *node) startProposal(ent *entry) (chan error, error) {
	ch := make(chan error, 1)
	n.mu.Lock()
	if !n.writable || n.closed {
		n.mu.Unlock()
		return nil, ErrNotPrimary
	}
	ent.proposal = n.proposalID.Add(1)
	ent.ts, ent.wall = n.nextTimestamp(), n.cfg.Clock.Now().UnixMilli()
	n.waiters[ent.proposal] = ch
	if err := n.rn.Propose(ent.encode()); err != nil {
		delete(n.waiters, ent.proposal)
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrNotPrimary, err)
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
func (n *node) nextTimestamp() Timestamp {
	secs := uint32(n.cfg.Clock.Now().Unix())
	if secs > n.lastTS.T {
		n.lastTS = Timestamp{T: secs, I: 1}
	} else {
		n.lastTS.I++
	}
	return n.lastTS
}

func (n *node) appliedTimestamp() Timestamp {
	v := n.appliedTS.Load()
	return Timestamp{T: uint32(v >> 32), I: uint32(v)}
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

func (n *node) status() status {
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
