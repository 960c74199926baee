package repl

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// ReadLinearizable waits until a read here sees every write acknowledged
// before it began (raft ReadIndex, on the primary).
func (rs *Replica) ReadLinearizable(ctx context.Context) error {
	n := rs.node()
	if n == nil {
		return ErrNotPrimary
	}
	return n.readIndex(ctx)
}

type readWait struct {
	index uint64
	done  chan error
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

// WaitForTimestamp waits until this member has applied an entry at or after
// ts (readConcern afterClusterTime).
func (rs *Replica) WaitForTimestamp(ctx context.Context, ts changestream.Timestamp) error {
	n := rs.node()
	if n == nil {
		return ErrNotPrimaryOrSecondary
	}
	for !n.appliedTimestamp().After(ts) && n.appliedTimestamp() != ts {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}
