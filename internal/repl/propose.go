package repl

import (
	"context"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// propWait is a proposal waiting for the raft loop.
type propWait struct {
	id   uint64
	data []byte
}

// backgroundInLog bounds the background proposals in the log and not yet
// applied: one applies while the next replicates, so the deletions keep
// the apply busy and a client's write waits for at most two batches.
const backgroundInLog = 2

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

// nextTimestamp is the primary's next entry stamp: seconds of its clock,
// never behind the last stamp nor the cluster time gossiped to it (a
// hybrid logical clock); n.mu is held.
func (n *node) nextTimestamp() changestream.Timestamp {
	if n.clusterTime.After(n.lastTS) {
		n.lastTS = n.clusterTime
	}
	secs := uint32(n.cfg.Clock.Now().Unix())
	if secs > n.lastTS.T {
		n.lastTS = changestream.Timestamp{T: secs, I: 1}
	} else {
		n.lastTS.I++
	}
	return n.lastTS
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

// propose hands ent to raft on the primary and waits until this member
// has applied it.
func (n *node) propose(ctx context.Context, ent *entry) error {
	ch, err := n.startProposal(ent, false)
	if err != nil {
		return err
	}
	return n.awaitProposal(ctx, ent.proposal, ch)
}

// propose sends a write entry through raft.
func (rs *Replica) propose(ctx context.Context, ent *entry) error {
	n := rs.node()
	if n == nil {
		return ErrNotPrimary
	}
	return n.propose(ctx, ent)
}
