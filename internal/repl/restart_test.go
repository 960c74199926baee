package repl

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// TestRestartAfterKillBetweenApplyAndPersist: a member applies committed
// entries it already holds before it persists the Ready whose HardState
// carries their commit index (handleReady's early apply), so a kill -9
// between the two leaves an applied index above the stored commit. raft
// refuses such a start with a panic ("applied(N) is out of range"), every
// time, so the member could never start again. The entries were committed
// by the set (raft handed them out as committed), so the restart takes
// the applied index as committed.
func TestRestartAfterKillBetweenApplyAndPersist(t *testing.T) {
	fs := vfs.NewMem()
	base, ls := openLog(t, fs)
	hs := &pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(1), Commit: proto.Uint64(3)}
	if err := ls.append(entries(1, 5, 1), hs, true); err != nil {
		t.Fatal(err)
	}
	// Entries 4 and 5 applied; the HardState with Commit 5 never written.
	a := applied{index: 5, term: 1, conf: &pb.ConfState{Voters: []uint64{1}}}
	b := base.NewBatch()
	if err := b.Set(appliedKey, a.encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := base.Close(); err != nil {
		t.Fatal(err)
	}

	base, ls = openLog(t, fs)
	defer base.Close()
	n, err := restartNode(base, ls)
	if err != nil {
		t.Fatal(err)
	}
	st := n.rn.BasicStatus()
	if st.Applied != 5 || st.HardState.GetCommit() != 5 {
		t.Fatalf("after restart: applied %d, commit %d; want 5 and 5", st.Applied, st.HardState.GetCommit())
	}
	if hs := ls.hardState; hs.GetTerm() != 1 || hs.GetVote() != 1 {
		t.Fatalf("term and vote changed: %v", hs)
	}
}

// openLog opens the store on fs and the raft log in it.
func openLog(t *testing.T, fs vfs.FS) (*pebblestore.Store, *logStore) {
	t.Helper()
	base := openBase(t, fs)
	ls, err := openLogStore(base)
	if err != nil {
		t.Fatal(err)
	}
	return base, ls
}

// restartNode makes the raft node a restarting member makes, turning
// raft's panic on an inconsistent stored state into an error.
func restartNode(base Base, ls *logStore) (n *node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("raft refused the stored state: %v", r)
		}
	}()
	return newNode(nodeConfig{
		ID: 1, Tick: 100 * time.Millisecond, ElectionTicks: 6, RetainEntries: 100,
		Clock: clock.Real{}, Logger: slog.New(slog.DiscardHandler),
	}, base, ls, nil)
}
