package repl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Raft state lives in the same engine as the documents, under the tag 'r'
// (internal/keyspace lists every tag):
//
//	'r' 'h'            → raft HardState (protobuf)
//	'r' 'm'            → the log's compaction point: SnapshotMetadata (protobuf)
//	'r' 'a'            → applied state: index(8) term(8) ConfState (protobuf)
//	'r' 'l' index(8)   → a log entry (protobuf)
//	'r' 'i'            → this member's raft ID (8 bytes)
//	'r' 'c'            → the replica set config (BSON), as last applied
//	'r' 'x'            → present while a snapshot is being installed
const tagRaft = byte(keyspace.Raft)

var (
	hardStateKey  = []byte{tagRaft, 'h'}
	compactedKey  = []byte{tagRaft, 'm'}
	appliedKey    = []byte{tagRaft, 'a'}
	identityKey   = []byte{tagRaft, 'i'}
	configKey     = []byte{tagRaft, 'c'}
	installingKey = []byte{tagRaft, 'x'}
	logPrefix     = []byte{tagRaft, 'l'}
)

func logKey(index uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), logPrefix...), index)
}

// logStore is raft.Storage over the engine: the log, the hard state and the
// compaction point are durable there, and the bounds are kept in memory.
// Append and the apply loop run on the node's goroutine; raft's reads may
// come from others (Status), hence the mutex.
type logStore struct {
	eng storage.Engine

	mu        sync.Mutex
	hardState *pb.HardState
	compacted *pb.SnapshotMetadata // entries up to Index are gone
	last      uint64
	terms     map[uint64]uint64 // recent entries' terms, by index
	recent    entryCache        // the newest entries themselves
}

var _ raft.Storage = (*logStore)(nil)

func openLogStore(eng storage.Engine) (*logStore, error) {
	ls := &logStore{eng: eng, hardState: &pb.HardState{}, compacted: &pb.SnapshotMetadata{ConfState: &pb.ConfState{}}, terms: map[uint64]uint64{},
		recent: entryCache{maxBytes: entryCacheBytes}}
	if err := readProto(eng, hardStateKey, ls.hardState); err != nil {
		return nil, err
	}
	if err := readProto(eng, compactedKey, ls.compacted); err != nil {
		return nil, err
	}
	if ls.compacted.ConfState == nil {
		ls.compacted.ConfState = &pb.ConfState{}
	}
	last, err := lastLogIndex(eng)
	if err != nil {
		return nil, err
	}
	ls.last = max(last, ls.compacted.GetIndex())
	return ls, nil
}

func readProto(eng storage.Engine, key []byte, m proto.Message) error {
	v, err := eng.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("repl: read %q: %w", key, err)
	}
	if err := proto.Unmarshal(v, m); err != nil {
		return fmt.Errorf("repl: decode %q: %w", key, err)
	}
	return nil
}

func lastLogIndex(eng storage.Engine) (uint64, error) {
	it, err := eng.NewIter(logPrefix, []byte{tagRaft, 'l' + 1})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	return binary.BigEndian.Uint64(it.Key()[len(logPrefix):]), nil
}

// InitialState implements raft.Storage. The ConfState is the one of the
// applied state, since raft replays the entries after it.
//
// The commit index is at least the applied index: a member applies the
// committed entries it already holds before it persists the HardState
// that carries their commit (handleReady), so a crash between the two
// leaves applied above the stored commit, a state raft refuses with a
// panic at every start. Those entries were committed (raft hands out
// only committed ones) and are in the log, so the commit is raised to
// them.
func (ls *logStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	a, err := readApplied(ls.eng)
	if err != nil {
		return nil, nil, err
	}
	hs := proto.Clone(ls.hardState).(*pb.HardState)
	if a.index > hs.GetCommit() && a.index <= ls.last {
		hs.Commit = proto.Uint64(a.index)
		ls.hardState.Commit = proto.Uint64(a.index)
	}
	return hs, a.conf, nil
}

// Entries implements raft.Storage.
func (ls *logStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	ls.mu.Lock()
	first, last := ls.compacted.GetIndex()+1, ls.last
	cached, ok := ls.recent.get(lo, hi, maxSize)
	ls.mu.Unlock()
	if lo < first {
		return nil, raft.ErrCompacted
	}
	if hi > last+1 {
		return nil, raft.ErrUnavailable
	}
	if ok {
		return cached, nil
	}
	it, err := ls.eng.NewIter(logKey(lo), logKey(hi))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*pb.Entry
	var size uint64
	for ok := it.First(); ok; ok = it.Next() {
		e := &pb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("repl: decode log entry: %w", err)
		}
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			break
		}
		out = append(out, e)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(out) == 0 || out[0].GetIndex() != lo {
		return nil, raft.ErrUnavailable
	}
	return out, nil
}

// Term implements raft.Storage.
func (ls *logStore) Term(i uint64) (uint64, error) {
	ls.mu.Lock()
	compacted, last := ls.compacted, ls.last
	t, cached := ls.terms[i]
	ls.mu.Unlock()
	switch {
	case i == compacted.GetIndex():
		return compacted.GetTerm(), nil
	case i < compacted.GetIndex():
		return 0, raft.ErrCompacted
	case i > last:
		return 0, raft.ErrUnavailable
	case cached:
		return t, nil
	}
	v, err := ls.eng.Get(logKey(i))
	if err != nil {
		return 0, fmt.Errorf("repl: term of %d: %w", i, err)
	}
	e := &pb.Entry{}
	if err := proto.Unmarshal(v, e); err != nil {
		return 0, err
	}
	return e.GetTerm(), nil
}

// LastIndex implements raft.Storage.
func (ls *logStore) LastIndex() (uint64, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.last, nil
}

// FirstIndex implements raft.Storage.
func (ls *logStore) FirstIndex() (uint64, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.compacted.GetIndex() + 1, nil
}

// Snapshot implements raft.Storage. The data travels separately (see
// snapshot.go); raft only needs to know the compaction point.
func (ls *logStore) Snapshot() (*pb.Snapshot, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return &pb.Snapshot{Metadata: proto.Clone(ls.compacted).(*pb.SnapshotMetadata)}, nil
}

// append durably writes entries (replacing any conflicting tail) and the
// hard state, in one batch.
func (ls *logStore) append(ents []*pb.Entry, hs *pb.HardState, sync bool) error {
	return ls.appendAll([]logAppend{{ents: ents, hs: hs}}, sync)
}

// logAppend is one write to the log: entries (replacing any conflicting
// tail from the first one's index on) and a hard state, either empty.
type logAppend struct {
	ents []*pb.Entry
	hs   *pb.HardState
}

// appendAll writes the appends in order in one storage batch, synced when
// sync is set: several of raft's appends then share one fsync.
func (ls *logStore) appendAll(as []logAppend, sync bool) error {
	b := ls.eng.NewBatch()
	defer b.Close()
	ls.mu.Lock()
	last := ls.last
	ls.mu.Unlock()
	var hs *pb.HardState
	for _, a := range as {
		var err error
		if last, err = stageEntries(b, a.ents, last); err != nil {
			return err
		}
		if a.hs != nil && !raft.IsEmptyHardState(a.hs) {
			hs = a.hs
		}
	}
	if hs != nil {
		raw, err := proto.Marshal(hs)
		if err != nil {
			return err
		}
		if err := b.Set(hardStateKey, raw); err != nil {
			return err
		}
	}
	if err := b.Commit(sync); err != nil {
		return fmt.Errorf("repl: append to the log: %w", err)
	}
	for _, a := range as {
		ls.noteAppended(a.ents, a.hs)
	}
	return nil
}

// stageEntries adds ents to b over a log whose last index is last; a
// later write in a batch wins over an earlier one, so the tail an append
// replaces is deleted before its entries are set. It returns the new last
// index.
func stageEntries(b storage.Batch, ents []*pb.Entry, last uint64) (uint64, error) {
	if len(ents) == 0 {
		return last, nil
	}
	if first := ents[0].GetIndex(); first <= last {
		if err := b.DeleteRange(logKey(first), logKey(last+1)); err != nil {
			return last, err
		}
	}
	for _, e := range ents {
		raw, err := proto.Marshal(e)
		if err != nil {
			return last, err
		}
		if err := b.Set(logKey(e.GetIndex()), raw); err != nil {
			return last, err
		}
	}
	return ents[len(ents)-1].GetIndex(), nil
}

func (ls *logStore) noteAppended(ents []*pb.Entry, hs *pb.HardState) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if hs != nil && !raft.IsEmptyHardState(hs) {
		ls.hardState = proto.Clone(hs).(*pb.HardState)
	}
	if len(ents) == 0 {
		return
	}
	ls.recent.add(ents)
	first := ents[0].GetIndex()
	for i := first; i <= ls.last; i++ {
		delete(ls.terms, i)
	}
	for _, e := range ents {
		ls.terms[e.GetIndex()] = e.GetTerm()
	}
	oldLast := ls.last
	ls.last = ents[len(ents)-1].GetIndex()
	// Forget the terms that fell out of the window: those the window held
	// before, below its new start (a walk over the whole map on every
	// append cost the leader 6 % of its CPU).
	from := max(oldLast, termCacheSize) - termCacheSize
	for i := from; i+termCacheSize < ls.last; i++ {
		delete(ls.terms, i)
	}
}

// termCacheSize is how many of the newest entries' terms stay in memory:
// raft asks for the terms of recent entries on every append.
const termCacheSize = 4096

// compact drops the log up to and including index, which must be applied.
func (ls *logStore) compact(index, term uint64, conf *pb.ConfState) error {
	ls.mu.Lock()
	first := ls.compacted.GetIndex() + 1
	ls.mu.Unlock()
	if index < first {
		return nil
	}
	meta := &pb.SnapshotMetadata{Index: proto.Uint64(index), Term: proto.Uint64(term), ConfState: conf}
	raw, err := proto.Marshal(meta)
	if err != nil {
		return err
	}
	b := ls.eng.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(logKey(first), logKey(index+1)); err != nil {
		return err
	}
	if err := b.Set(compactedKey, raw); err != nil {
		return err
	}
	if err := b.Commit(false); err != nil {
		return fmt.Errorf("repl: compact the log: %w", err)
	}
	ls.mu.Lock()
	ls.compacted = meta
	ls.mu.Unlock()
	return nil
}

// restart makes the log start after a snapshot installed at meta: every
// older entry is gone. The caller has written the snapshot's data.
func (ls *logStore) restart(b storage.Batch, meta *pb.SnapshotMetadata) error {
	raw, err := proto.Marshal(meta)
	if err != nil {
		return err
	}
	if err := b.DeleteRange(logPrefix, []byte{tagRaft, 'l' + 1}); err != nil {
		return err
	}
	if err := b.Set(compactedKey, raw); err != nil {
		return err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.compacted = proto.Clone(meta).(*pb.SnapshotMetadata)
	ls.last = meta.GetIndex()
	ls.terms = map[uint64]uint64{}
	ls.recent.reset()
	return nil
}

// applied is the state the documents are at: the last applied entry and
// the membership as of it.
type applied struct {
	index, term uint64
	conf        *pb.ConfState
}

func readApplied(r storage.Reader) (applied, error) {
	a := applied{conf: &pb.ConfState{}}
	v, err := r.Get(appliedKey)
	if errors.Is(err, storage.ErrNotFound) {
		return a, nil
	}
	if err != nil {
		return a, fmt.Errorf("repl: read applied state: %w", err)
	}
	return decodeApplied(v)
}

func decodeApplied(v []byte) (applied, error) {
	a := applied{conf: &pb.ConfState{}}
	if len(v) < 16 {
		return a, fmt.Errorf("repl: applied state of %d bytes", len(v))
	}
	a.index, a.term = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
	if err := proto.Unmarshal(v[16:], a.conf); err != nil {
		return a, fmt.Errorf("repl: decode applied state: %w", err)
	}
	return a, nil
}

func (a applied) encode() []byte {
	v := binary.BigEndian.AppendUint64(nil, a.index)
	v = binary.BigEndian.AppendUint64(v, a.term)
	raw, _ := proto.Marshal(a.conf)
	return append(v, raw...)
}
