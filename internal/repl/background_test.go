package repl

import (
	"context"
	"github.com/mayflydb/mayfly/internal/changestream"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// heldExpiries holds every member's apply of an entry with expiries until
// released, as a storm's large deletion batches hold the apply.
type heldExpiries struct {
	noHooks
	release chan struct{}
}

func (h heldExpiries) ApplyExpiries(storage.Batch, [][]byte) ([][]byte, func(), error) {
	<-h.release
	return nil, nil, nil
}

// TestBackgroundProposalsFollowClientWrites queues fifty background
// proposals, as a storm's TTL batches are, while the apply is held: only
// backgroundInLog of them go into the log, and a client's write proposed
// then goes in right behind those, not behind the whole queue. Released,
// every proposal is applied and the stamps grow in log order.
func TestBackgroundProposalsFollowClientWrites(t *testing.T) {
	hooks := heldExpiries{release: make(chan struct{})}
	c := newClusterWith(t, 1000, func() *pebblestore.Store { return openBase(t, vfs.NewMem()) }, hooks)
	l := c.leader()
	released := false
	defer func() {
		if !released {
			close(hooks.release)
		}
	}()
	const queued = 50
	var waits []chan error
	var ids []uint64
	for i := range queued {
		ent := &entry{kind: kindWrite}
		ent.expiries.add([]byte{byte(i)})
		ent.flags |= flagExpiry
		ch, err := l.startProposal(ent, true)
		if err != nil {
			t.Fatal(err)
		}
		waits, ids = append(waits, ch), append(ids, ent.proposal)
	}
	waitLogLen(t, l, backgroundInLog)
	time.Sleep(50 * time.Millisecond) // room for any more to go in
	if inLog := logOrder(t, l); len(inLog) != backgroundInLog {
		t.Fatalf("%d background proposals went into the log while the apply was held, want %d", len(inLog), backgroundInLog)
	}

	client := &entry{kind: kindWrite, payload: setRepr(t, l, "dclient", "x")}
	ch, err := l.startProposal(client, false)
	if err != nil {
		t.Fatal(err)
	}
	waits, ids = append(waits, ch), append(ids, client.proposal)
	inLog := waitLogLen(t, l, backgroundInLog+1)
	if at := slices.Index(inLog, client.proposal); at != backgroundInLog {
		t.Fatalf("the client's write is at %d in the log, want %d, right behind the background proposals there", at, backgroundInLog)
	}

	close(hooks.release)
	released = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, ch := range waits {
		if err := l.awaitProposal(ctx, ids[i], ch); err != nil {
			t.Fatalf("proposal %d: %v", i, err)
		}
	}
	if n := len(logOrder(t, l)); n != queued+1 {
		t.Fatalf("%d of the %d proposals are in the log", n, queued+1)
	}
}

// setRepr is a storage batch's repr that stores key=value.
func setRepr(t *testing.T, l *node, key, value string) []byte {
	t.Helper()
	bt := l.base.NewBatch()
	defer bt.Close()
	if err := bt.Set([]byte(key), []byte(value)); err != nil {
		t.Fatal(err)
	}
	repr, err := bt.(storage.Encodable).Repr()
	if err != nil {
		t.Fatal(err)
	}
	return repr
}

// waitLogLen waits until the leader's log holds at least n write entries
// and returns their proposal ids in log order.
func waitLogLen(t *testing.T, l *node, n int) []uint64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids := logOrder(t, l)
		if len(ids) >= n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log holds %d write entries, want %d", len(ids), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// logOrder is the proposal ids of the leader's write entries in log
// order; it fails the test unless their stamps grow in that order.
func logOrder(t *testing.T, l *node) []uint64 {
	t.Helper()
	first, _ := l.ls.FirstIndex()
	last, _ := l.ls.LastIndex()
	ents, err := l.ls.Entries(first, last+1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	var prev changestream.Timestamp
	for _, e := range ents {
		if e.GetType() != pb.EntryNormal || len(e.GetData()) == 0 {
			continue
		}
		ent, err := decodeEntry(e.GetData())
		if err != nil {
			t.Fatal(err)
		}
		if ent.kind != kindWrite {
			continue
		}
		if !ent.ts.After(prev) {
			t.Fatalf("entry %d stamped %v after %v", e.GetIndex(), ent.ts, prev)
		}
		prev = ent.ts
		ids = append(ids, ent.proposal)
	}
	return ids
}
