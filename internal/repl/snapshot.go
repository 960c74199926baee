package repl

import (
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// A member too far behind for the log catches up from a snapshot: the
// primary streams every key of a consistent storage snapshot (documents,
// indexes, catalog, sessions, config), which the member stages under the
// tag 'z'; when raft accepts the snapshot, the staged keys replace the
// member's data in one swap, restarted after a crash (the 'r' 'x' marker)
// until it is done.
const tagStaged = byte(keyspace.Staged)

// dataRanges are the key ranges a snapshot carries: everything but raft's
// own state and the staging area, plus the replica set config.
var dataRanges = [][2][]byte{{nil, {tagRaft}}, {{tagRaft + 1}, {tagStaged}}}

// snapshotChunk is how many bytes of keys and values one message carries.
const snapshotChunk = 2 << 20

// readSnapshot walks a consistent view of the data in chunks; emit gets
// each chunk as alternating keys and values.
func readSnapshot(r storage.Reader, emit func(kvs [][]byte) error) error {
	var kvs [][]byte
	size := 0
	for _, rg := range append(dataRanges, [2][]byte{configKey, append(append([]byte(nil), configKey...), 0)}) {
		it, err := r.NewIter(rg[0], rg[1])
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			kvs = append(kvs, append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...))
			size += len(it.Key()) + len(it.Value())
			if size >= snapshotChunk {
				if err := emit(kvs); err != nil {
					it.Close()
					return err
				}
				kvs, size = nil, 0
			}
		}
		err = it.Error()
		it.Close()
		if err != nil {
			return err
		}
	}
	if len(kvs) > 0 {
		return emit(kvs)
	}
	return nil
}

// stageBegin clears the staging area for a new snapshot.
func stageBegin(eng storage.Engine) error {
	b := eng.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte{tagStaged}, []byte{tagStaged + 1}); err != nil {
		return err
	}
	return b.Commit(false)
}

// swapAndReload puts the staged snapshot in place and has the layers
// above read it again, within one span of the hooks' (BeginApply).
func (n *node) swapAndReload(meta *pb.SnapshotMetadata) error {
	n.hooks.BeginApply()
	defer n.hooks.EndApply()
	if err := swapStaged(n.base, n.ls, meta); err != nil {
		return fmt.Errorf("repl: install snapshot at %d: %w", meta.GetIndex(), err)
	}
	n.mu.Lock()
	n.confState = meta.GetConfState()
	n.mu.Unlock()
	n.applied.Store(meta.GetIndex())
	n.hooks.Reloaded()
	return nil
}

// stageChunk writes one chunk of a snapshot into the staging area.
func stageChunk(eng storage.Engine, kvs [][]byte) error {
	if len(kvs)%2 != 0 {
		return fmt.Errorf("repl: snapshot chunk with %d items", len(kvs))
	}
	b := eng.NewBatch()
	defer b.Close()
	for i := 0; i < len(kvs); i += 2 {
		if err := b.Set(append([]byte{tagStaged}, kvs[i]...), kvs[i+1]); err != nil {
			return err
		}
	}
	return b.Commit(false)
}

// installSnapshot replaces this member's data with the staged snapshot
// and restarts the log after it. It runs on the node's goroutine.
func (n *node) installSnapshot(snap *pb.Snapshot) error {
	meta := snap.GetMetadata()
	mark := n.base.NewBatch()
	raw, _ := proto.Marshal(meta)
	if err := mark.Set(installingKey, raw); err != nil {
		mark.Close()
		return err
	}
	if err := mark.Commit(true); err != nil {
		mark.Close()
		return err
	}
	mark.Close()
	if err := n.swapAndReload(meta); err != nil {
		return err
	}
	if raw, err := n.base.Get(configKey); err == nil && n.onCfg != nil {
		n.onCfg(raw)
	}
	return nil
}

// swapStaged moves the staged keys over the data, then records the
// snapshot as applied and the log as starting after it.
func swapStaged(eng storage.Engine, ls *logStore, meta *pb.SnapshotMetadata) error {
	b := eng.NewBatch()
	for _, rg := range dataRanges {
		start := rg[0]
		if start == nil {
			start = []byte{}
		}
		if err := b.DeleteRange(start, rg[1]); err != nil {
			b.Close()
			return err
		}
	}
	if err := b.Delete(configKey); err != nil {
		b.Close()
		return err
	}
	if err := b.Commit(false); err != nil {
		b.Close()
		return err
	}
	b.Close()
	if err := copyStaged(eng); err != nil {
		return err
	}
	b = eng.NewBatch()
	defer b.Close()
	if err := ls.restart(b, meta); err != nil {
		return err
	}
	a := applied{index: meta.GetIndex(), term: meta.GetTerm(), conf: meta.GetConfState()}
	if err := b.Set(appliedKey, a.encode()); err != nil {
		return err
	}
	if err := b.DeleteRange([]byte{tagStaged}, []byte{tagStaged + 1}); err != nil {
		return err
	}
	if err := b.Delete(installingKey); err != nil {
		return err
	}
	return b.Commit(true)
}

func copyStaged(eng storage.Engine) error {
	it, err := eng.NewIter([]byte{tagStaged}, []byte{tagStaged + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	b := eng.NewBatch()
	size := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := b.Set(it.Key()[1:], it.Value()); err != nil {
			b.Close()
			return err
		}
		if size += len(it.Key()) + len(it.Value()); size >= snapshotChunk {
			if err := b.Commit(false); err != nil {
				b.Close()
				return err
			}
			b.Close()
			b, size = eng.NewBatch(), 0
		}
	}
	defer b.Close()
	if err := it.Error(); err != nil {
		return err
	}
	return b.Commit(false)
}

// resumeInstall finishes a snapshot install a crash interrupted.
func resumeInstall(eng storage.Engine, ls *logStore) error {
	raw, err := eng.Get(installingKey)
	if err != nil {
		return nil // nothing interrupted
	}
	meta := &pb.SnapshotMetadata{}
	if err := proto.Unmarshal(raw, meta); err != nil {
		return fmt.Errorf("repl: decode interrupted snapshot: %w", err)
	}
	return swapStaged(eng, ls, meta)
}
