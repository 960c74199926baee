package repl

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

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
	n.applyq.push(applyReq{done: done})
	<-done
}
