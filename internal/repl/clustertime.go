package repl

import (
	"context"
	"time"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// catchUpWait bounds the wait for a no-op entry's apply: one raft round
// on a healthy set.
const catchUpWait = 2 * time.Second

// AdvanceClusterTime is the receive step of the cluster's hybrid logical
// clock: a router (or another member of a sharded cluster) gossiped ts,
// and this member's next stamp as primary comes after it. Stamps of the
// shards then order with the writes a client saw through the router.
func (rs *Replica) AdvanceClusterTime(ts changestream.Timestamp) {
	if n := rs.node(); n != nil {
		n.advanceClusterTime(ts)
	}
}

func (n *node) advanceClusterTime(ts changestream.Timestamp) {
	n.mu.Lock()
	if ts.After(n.clusterTime) {
		n.clusterTime = ts
	}
	n.mu.Unlock()
}

// CatchUpClusterTime writes a no-op entry when the cluster time gossiped
// to this primary is past every stamp it has given, and waits for its
// apply. An idle shard's change streams then report a high-water mark
// past that time, so a router merging the shards' streams can hand on
// another shard's later events. Nothing is written while the member's
// own stamps keep up (every busy shard), nor on a secondary.
//
// It is best effort: the caller's stream reads what is applied whatever
// happens here. The wait is not cut short by a getMore's short
// maxTimeMS, which would leave the stream behind the entry it asked for.
func (rs *Replica) CatchUpClusterTime(ctx context.Context) {
	if n := rs.node(); n != nil {
		n.catchUpClusterTime(ctx)
	}
}

func (n *node) catchUpClusterTime(ctx context.Context) {
	n.mu.Lock()
	behind := n.writable && n.clusterTime.After(n.lastTS)
	n.mu.Unlock()
	if !behind {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catchUpWait)
	defer cancel()
	_ = n.propose(ctx, &entry{kind: kindNoop}) // not primary any more, or slow: the stream reads what is applied
}
