package repl

import (
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
)

// applyReq is a MsgStorageApply for the applier, or a barrier: done is
// closed once everything handed to the applier before it is applied.
type applyReq struct {
	m    *pb.Message
	done chan struct{}
}

// applyLoop applies the committed entries the raft loop hands it, in
// order, everything waiting at once (up to each barrier), until the node
// closes. After a failure it applies nothing more: a later entry may
// depend on the one that failed.
func (n *node) applyLoop() {
	defer close(n.applyDone)
	var reqs []applyReq
	var msgs []*pb.Message
	for {
		var ok bool
		if reqs, ok = n.applyq.take(reqs[:0]); !ok {
			return
		}
		msgs = msgs[:0]
		for _, req := range reqs {
			if req.done == nil {
				msgs = append(msgs, req.m)
				continue
			}
			n.applyMsgs(msgs)
			msgs = msgs[:0]
			close(req.done)
		}
		n.applyMsgs(msgs)
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
	n.skipSpareInstalls(b)
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
	if err := n.commitAndPublish(b, last, publish, decoded); err != nil {
		return err
	}
	n.cfg.Changes.Notify()
	n.maybePromote(last.GetTerm())
	if confChanged && n.onConfChange != nil {
		n.onConfChange()
	}
	return nil
}

// commitAndPublish commits the group's batch and then makes what it
// changed known: the counts of its expiries, and each entry to its
// proposer or to the layers above. The hooks hear of the span, in which
// storage holds what the counts do not yet say.
func (n *node) commitAndPublish(b storage.Batch, last *pb.Entry, publish []func(), decoded []*entry) error {
	n.hooks.BeginApply()
	defer n.hooks.EndApply()
	if err := n.commitApplied(b, last); err != nil {
		return err
	}
	for _, pub := range publish {
		pub()
	}
	for _, ent := range decoded {
		n.noteApplied(ent)
	}
	return nil
}

// skipSpareInstalls keeps a member's cache out of what it applies while
// another member leads: the leader's readers read the leader, and this
// member's own readers bring in what they read (storage.SpareInstallSkipper).
func (n *node) skipSpareInstalls(b storage.Batch) {
	if n.leaderID() == n.cfg.ID {
		return
	}
	if s, ok := b.(storage.SpareInstallSkipper); ok {
		s.SkipSpareInstalls()
	}
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
		if ent.refusal = n.supersededConfig(ent.payload); ent.refusal != nil {
			return ent, nil, nil
		}
		return ent, nil, b.Set(configKey, ent.payload)
	}
	return ent, nil, nil
}

// supersededConfig refuses raw, a config entry, when the config already
// applied has a higher version: the primary's first copy of its initiate
// config (replicateConfig, proposed on promotion) can reach the log after
// a reconfig a client sent at once, and must not undo it. Every member
// applies the same log over the same stored config, so every member
// refuses the same entries. A config entry ends its apply group, so the
// stored config is the one applied before it.
func (n *node) supersededConfig(raw []byte) error {
	cur, err := n.base.Get(configKey)
	if err != nil {
		return nil // no config applied yet
	}
	next, applied := configVersion(raw), configVersion(cur)
	if next >= applied {
		return nil
	}
	return &IncompatibleConfigError{fmt.Sprintf("New replica set configuration version must be greater than old, but %d is not greater than %d", next, applied)}
}

// configVersion is a config document's version, 1 when it has none (as
// ParseConfig reads it).
func configVersion(raw []byte) int64 {
	v, err := bson.Raw(raw).LookupErr("version")
	if err != nil {
		return 1
	}
	if n, ok := v.AsInt64OK(); ok {
		return n
	}
	return 1
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
	if ent.kind == kindConfig && n.onCfg != nil && ent.refusal == nil {
		n.onCfg(ent.payload)
	}
	if mine {
		ch <- ent.refusal
		return
	}
	if ent.kind == kindWrite {
		n.hooks.Applied(ent.deltas, ent.flags&flagCatalog != 0)
	}
}

func (n *node) appliedTimestamp() changestream.Timestamp {
	v := n.appliedTS.Load()
	return changestream.Timestamp{T: uint32(v >> 32), I: uint32(v)}
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
