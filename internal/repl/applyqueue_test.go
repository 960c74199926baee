package repl

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// TestApplyInboxKeepsOrderWithoutWaiting pushes more requests than any
// applier would hold with nobody taking them: no push waits, a take
// returns them all in order, and a closed inbox gives what it still
// holds before it reports the end.
func TestApplyInboxKeepsOrderWithoutWaiting(t *testing.T) {
	q := newApplyInbox()
	const n = 10_000
	for i := range n {
		q.push(applyReq{m: &pb.Message{Index: proto.Uint64(uint64(i))}})
	}
	got, ok := q.take(nil)
	if !ok || len(got) != n {
		t.Fatalf("take: %d requests, %v; want %d", len(got), ok, n)
	}
	for i, r := range got {
		if r.m.GetIndex() != uint64(i) {
			t.Fatalf("request %d is message %d", i, r.m.GetIndex())
		}
	}
	done := make(chan struct{})
	q.push(applyReq{done: done})
	q.close()
	if got, ok := q.take(nil); !ok || len(got) != 1 || got[0].done != done {
		t.Fatalf("after close: %d requests, %v; want the barrier queued before it", len(got), ok)
	}
	if got, ok := q.take(nil); ok || len(got) != 0 {
		t.Fatalf("closed and empty: %d requests, %v; want none and the end", len(got), ok)
	}
}

// heldOn holds the apply of expiries on a member whose bit is set in
// held, as a follower busy with a storm's large deletion batches.
type heldOn struct {
	noHooks
	id      uint64
	held    *atomic.Uint64 // bit id set: held
	release chan struct{}
}

func (h heldOn) ApplyExpiries(storage.Batch, [][]byte) ([][]byte, func(), error) {
	if h.held.Load()&(1<<h.id) != 0 {
		<-h.release
	}
	return nil, nil, nil
}

// TestHeldAppliesDoNotHoldCommits holds both followers' applier on an
// expiry entry, then writes through the leader one write at a time,
// many more rounds than any fixed queue to the applier would hold: the
// followers go on persisting and acknowledging, so every write commits
// and is applied on the leader. What waits for a held applier stays
// within raft's bound (maxApplying and one entry), though the writes
// hold more.
func TestHeldAppliesDoNotHoldCommits(t *testing.T) {
	var held atomic.Uint64
	release := make(chan struct{})
	defer close(release)
	c := newClusterEach(t, 1000, func() *pebblestore.Store { return openBase(t, vfs.NewMem()) },
		func(id uint64) Hooks { return heldOn{id: id, held: &held, release: release} })
	l := c.leader()
	held.Store((1<<1 | 1<<2 | 1<<3) &^ (1 << l.cfg.ID)) // the followers
	exp := &entry{kind: kindWrite, flags: flagExpiry}
	exp.expiries.add([]byte{1})
	ch, err := l.startProposal(exp, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.awaitProposal(ctx, exp.proposal, ch); err != nil {
		t.Fatalf("expiry entry: %v", err)
	}
	const writes = 40
	value := make([]byte, 16<<10)
	for i := range writes {
		if err := proposeSet(l, fmt.Sprintf("dheld%d", i), value); err != nil {
			t.Fatalf("write %d of %d with the followers' applies held: %v", i+1, writes, err)
		}
	}
	// raft stops handing out entries once the bound is reached, so the
	// last one handed out may cross it.
	bound := maxApplying + len(value) + 1024
	for id := uint64(1); id <= 3; id++ {
		if id == l.cfg.ID {
			continue
		}
		if b := c.node(id).applyq.entryBytes(); b > bound {
			t.Errorf("member %d: %d bytes of entries wait for its applier, past raft's bound of %d and one entry (the writes hold %d)", id, b, maxApplying, writes*len(value))
		}
	}
}

// entryBytes is the size of the entries waiting in q.
func (q *applyInbox) entryBytes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, r := range q.reqs {
		for _, e := range r.m.GetEntries() {
			n += len(e.GetData())
		}
	}
	return n
}
