package repl

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"
)

// replicateConfig puts the local config into the log, on the primary of a
// set that was just initiated.
func (rs *Replica) replicateConfig() {
	c := rs.Config()
	if c == nil {
		return
	}
	// Raft drops proposals while leadership moves; try again while this
	// member is still the primary.
	for try := 0; try < 10 && rs.Writable() && !rs.configApplied.Load(); try++ {
		err := rs.proposeConfig(c)
		var superseded *IncompatibleConfigError
		if err == nil || errors.As(err, &superseded) {
			return // in the log, or a reconfig's newer config already is
		}
		rs.cfg.Logger.Warn("replicating the replica set config failed", "err", err)
		time.Sleep(rs.cfg.Tick)
	}
}

func (rs *Replica) proposeConfig(c *SetConfig) error {
	raw, err := bson.Marshal(c.Doc())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
	defer cancel()
	return rs.propose(ctx, &entry{kind: kindConfig, payload: raw})
}

// syncMembership makes raft's voters and learners match the config, one
// change at a time, on the primary.
func (rs *Replica) syncMembership() {
	n, c := rs.node(), rs.Config()
	if n == nil || c == nil {
		return
	}
	n.mu.Lock()
	conf := proto.Clone(n.confState).(*pb.ConfState)
	n.mu.Unlock()
	cc := membershipChange(conf, c)
	if cc == nil {
		return
	}
	if err := n.proposeConfChange(cc); err != nil && !errors.Is(err, ErrNotPrimary) {
		rs.cfg.Logger.Warn("membership change failed", "err", err)
	}
}

// membershipChange is the first raft change that brings conf towards c,
// or nil when they agree.
func membershipChange(conf *pb.ConfState, c *SetConfig) *pb.ConfChangeV2 {
	has := func(ids []uint64, id uint64) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
	single := func(t pb.ConfChangeType, id uint64) *pb.ConfChangeV2 {
		return &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: t.Enum(), NodeId: proto.Uint64(id)}}}
	}
	for _, m := range c.Members {
		id := m.RaftID()
		switch {
		case m.Votes > 0 && !has(conf.GetVoters(), id):
			return single(pb.ConfChangeType_ConfChangeAddNode, id)
		case m.Votes == 0 && !has(conf.GetLearners(), id):
			return single(pb.ConfChangeType_ConfChangeAddLearnerNode, id)
		}
	}
	for _, id := range append(append([]uint64{}, conf.GetVoters()...), conf.GetLearners()...) {
		if _, ok := c.member(id); !ok {
			return single(pb.ConfChangeType_ConfChangeRemoveNode, id)
		}
	}
	return nil
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

// yieldIfIneligible hands leadership on when this member may not be
// primary (priority 0, or frozen): raft has no priorities, so Mayfly does
// what mongod's priority takeover does, at once.
// It reports whether it asked for a transfer.
func (rs *Replica) yieldIfIneligible() bool {
	rs.mu.Lock()
	c, frozen := rs.set, rs.cfg.Clock.Now().Before(rs.frozen)
	rs.mu.Unlock()
	if c == nil {
		return false
	}
	me, ok := c.member(rs.myID)
	if ok && me.Priority > 0 && !frozen {
		return false
	}
	to := rs.bestSuccessor()
	if to == 0 {
		return false
	}
	rs.node().transferLeadership(to)
	return true
}

// maxYieldTries bounds how often a new primary that may not lead asks
// again for a transfer that did not take.
const maxYieldTries = 10

// yieldWhileIneligible is yieldIfIneligible, asked again while this
// member still leads: raft drops a transfer whose successor does not
// campaign within an election timeout, and a successor refuses to while
// it still has configuration entries to apply, as right after an
// initiate.
func (rs *Replica) yieldWhileIneligible() {
	wait := rs.cfg.Tick * time.Duration(2*rs.cfg.ElectionTicks)
	for try := 0; try < maxYieldTries && rs.yieldIfIneligible(); try++ {
		t := rs.cfg.Clock.NewTimer(wait)
		<-t.C()
		if n := rs.node(); n == nil || n.status().role != raft.StateLeader {
			return
		}
	}
}

// bestSuccessor is the electable member that has applied the most.
func (rs *Replica) bestSuccessor() uint64 {
	n, c := rs.node(), rs.Config()
	if n == nil || c == nil {
		return 0
	}
	st := n.status()
	var best, bestMatch uint64
	for _, m := range c.Members {
		id := m.RaftID()
		if id == rs.myID || m.Priority <= 0 || m.Votes == 0 {
			continue
		}
		if match := st.progress[id]; best == 0 || match > bestMatch {
			best, bestMatch = id, match
		}
	}
	return best
}

// transferLeadership asks raft to hand leadership to to.
func (n *node) transferLeadership(to uint64) {
	n.mu.Lock()
	n.rn.TransferLeader(to)
	n.mu.Unlock()
	n.poke()
}
