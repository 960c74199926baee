package repl

import (
	"bytes"
	"context"
	"fmt"
	"github.com/mayflydb/mayfly/internal/changestream"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func openBase(t testing.TB, fs vfs.FS) *pebblestore.Store {
	t.Helper()
	s, err := pebblestore.Open(pebblestore.Options{Dir: "db", FS: fs, SyncInterval: -1, RecoverInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entries(from, to, term uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := from; i <= to; i++ {
		out = append(out, &pb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: []byte(fmt.Sprint(i))})
	}
	return out
}

func TestLogStoreAppendReadCompactReopen(t *testing.T) {
	fs := vfs.NewMem()
	base, ls := openLog(t, fs)
	hs := &pb.HardState{Term: proto.Uint64(2), Vote: proto.Uint64(1), Commit: proto.Uint64(5)}
	if err := ls.append(entries(1, 10, 1), hs, true); err != nil {
		t.Fatal(err)
	}
	// A new leader's entries replace a conflicting tail.
	if err := ls.append(entries(8, 9, 2), nil, true); err != nil {
		t.Fatal(err)
	}
	if last, _ := ls.LastIndex(); last != 9 {
		t.Fatalf("last index %d after the tail was replaced, want 9", last)
	}
	if term, _ := ls.Term(8); term != 2 {
		t.Fatalf("term of 8 is %d, want 2", term)
	}
	got, err := ls.Entries(3, 10, 1<<20)
	if err != nil || len(got) != 7 || got[0].GetIndex() != 3 {
		t.Fatalf("entries 3..9: %d entries, %v", len(got), err)
	}
	if one, _ := ls.Entries(3, 10, 1); len(one) != 1 {
		t.Fatalf("maxSize 1 gave %d entries, want exactly one", len(one))
	}
	if err := ls.compact(5, 1, &pb.ConfState{Voters: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Entries(4, 6, 1<<20); err == nil {
		t.Fatal("compacted entries are still readable")
	}
	if first, _ := ls.FirstIndex(); first != 6 {
		t.Fatalf("first index %d after compacting to 5", first)
	}
	if err := base.Close(); err != nil {
		t.Fatal(err)
	}
	base, ls = openLog(t, fs)
	defer base.Close()
	first, _ := ls.FirstIndex()
	last, _ := ls.LastIndex()
	term, _ := ls.Term(5)
	st, _, _ := ls.InitialState()
	if first != 6 || last != 9 || term != 1 || st.GetCommit() != 5 || st.GetVote() != 1 {
		t.Fatalf("after reopen: first %d last %d term(5) %d hard state %v", first, last, term, st)
	}
}

func TestEntryRoundTrip(t *testing.T) {
	e := &entry{kind: kindWrite, proposal: 42, ts: changestream.Timestamp{T: 100, I: 3}, wall: 1234, flags: flagCatalog,
		deltas: []CountDelta{{CollID: 7, Docs: -3, Bytes: -300}, {CollID: 9, Docs: 1, Bytes: 55}},
		events: [][]byte{[]byte("ev1"), {}, []byte("event three")}, payload: []byte("batch")}
	got, err := decodeEntry(e.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.kind != e.kind || got.proposal != 42 || got.ts != e.ts || got.wall != 1234 || got.flags != flagCatalog ||
		len(got.deltas) != 2 || got.deltas[0] != e.deltas[0] || got.deltas[1] != e.deltas[1] || !bytes.Equal(got.payload, e.payload) {
		t.Fatalf("round trip: %+v", got)
	}
	if len(got.events) != 3 || string(got.events[0]) != "ev1" || len(got.events[1]) != 0 || string(got.events[2]) != "event three" {
		t.Fatalf("events round trip: %q", got.events)
	}
	if _, err := decodeEntry([]byte{1, 2, 3}); err == nil {
		t.Fatal("a truncated entry decoded")
	}
}

func TestParseConfigRefusesWhatMongodRefuses(t *testing.T) {
	member := func(id int32, host string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "_id", Value: id}, {Key: "host", Value: host}}, extra...)
	}
	for _, tc := range []struct {
		name string
		doc  bson.D
		want string
	}{
		{"no members", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{}}}, "at least one member"},
		{"same _id", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a:1"), member(0, "b:1")}}}, "same _id"},
		{"same host", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a:1"), member(1, "A:1")}}}, "same host"},
		{"no port", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a")}}}, "host:port"},
		{"arbiter", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a:1", bson.E{Key: "arbiterOnly", Value: true})}}}, "arbiters"},
		{"votes 0 priority 1", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a:1"), member(1, "b:1", bson.E{Key: "votes", Value: int32(0)})}}}, "priority must be 0"},
		{"unknown field", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0, "a:1")}}, {Key: "frob", Value: 1}}, "Unexpected field frob"},
	} {
		_, err := ParseConfig(tc.doc)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	c, err := ParseConfig(bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: int32(3)}, {Key: "members", Value: bson.A{member(0, "A:1"), member(2, "b:2", bson.E{Key: "priority", Value: 0.0})}}})
	if err != nil || c.Version != 3 || c.Members[0].Host != "a:1" || c.majority() != 2 || c.Members[1].RaftID() != 3 {
		t.Fatalf("valid config: %+v, %v", c, err)
	}
}

// cluster is three nodes in one process, joined by a router that can cut
// links, each over its own in-memory engine.
type cluster struct {
	t      testing.TB
	hooks  func(id uint64) Hooks // each node's
	retain uint64
	mu     sync.Mutex
	nodes  map[uint64]*node
	bases  map[uint64]*pebblestore.Store
	cut    map[uint64]bool
}

type noHooks struct{}

func (noHooks) Applied([]CountDelta, bool) {}
func (noHooks) Reloaded()                  {}
func (noHooks) ApplyExpiries(storage.Batch, [][]byte) ([][]byte, func(), error) {
	return nil, nil, errNoExpirer
}
func (noHooks) Promoted()   {}
func (noHooks) Demoted()    {}
func (noHooks) BeginApply() {}
func (noHooks) EndApply()   {}

func newCluster(t *testing.T) *cluster {
	return newClusterOn(t, 5, func() *pebblestore.Store { return openBase(t, vfs.NewMem()) })
}

// newClusterOn starts three nodes, each over an engine open makes, keeping
// retain entries of log behind the applied index (tests keep few, so that
// lagging members catch up by snapshot).
func newClusterOn(t testing.TB, retain uint64, open func() *pebblestore.Store) *cluster {
	return newClusterWith(t, retain, open, noHooks{})
}

// newClusterWith is newClusterOn with every node's hooks.
func newClusterWith(t testing.TB, retain uint64, open func() *pebblestore.Store, hooks Hooks) *cluster {
	return newClusterEach(t, retain, open, func(uint64) Hooks { return hooks })
}

// newClusterEach is newClusterOn with each node's own hooks.
func newClusterEach(t testing.TB, retain uint64, open func() *pebblestore.Store, hooks func(id uint64) Hooks) *cluster {
	c := &cluster{t: t, retain: retain, hooks: hooks, nodes: map[uint64]*node{}, bases: map[uint64]*pebblestore.Store{}, cut: map[uint64]bool{}}
	for id := uint64(1); id <= 3; id++ {
		c.bases[id] = open()
		c.startNode(id)
	}
	if err := c.node(1).bootstrap([]uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	c.node(1).poke()
	t.Cleanup(func() {
		for id := uint64(1); id <= 3; id++ {
			c.node(id).close()
			_ = c.bases[id].Close()
		}
	})
	return c
}

func (c *cluster) node(id uint64) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// startNode (re)starts node id over its engine, as a process restart does.
func (c *cluster) startNode(id uint64) {
	ls, err := openLogStore(c.bases[id])
	if err != nil {
		c.t.Fatal(err)
	}
	n, err := newNode(nodeConfig{ID: id, Tick: 10 * time.Millisecond, ElectionTicks: 10, RetainEntries: c.retain, Clock: clock.Real{}, Logger: slog.New(slog.DiscardHandler)}, c.bases[id], ls, c.hooks(id))
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	n.start(c.route)
}

func (c *cluster) route(msgs []*pb.Message) {
	for _, m := range msgs {
		c.mu.Lock()
		to, cut := c.nodes[m.GetTo()], c.cut[m.GetTo()] || c.cut[m.GetFrom()]
		c.mu.Unlock()
		switch {
		case to == nil || cut:
		case m.GetType() == pb.MessageType_MsgSnap:
			go c.shipSnapshot(m, to)
		default:
			msg := proto.Clone(m).(*pb.Message)
			go func() { _ = to.step(msg) }()
		}
	}
}

// leader waits for a writable leader.
func (c *cluster) leader() *node {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id := uint64(1); id <= 3; id++ {
			n := c.node(id)
			if st := n.status(); st.writable && !c.isCut(id) {
				return n
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no writable leader")
	return nil
}

func (c *cluster) isCut(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut[id]
}

// put proposes one write of key=value through the leader.
func (c *cluster) put(key, value string) error {
	return proposeSet(c.leader(), "d"+key, []byte(value))
}

func (c *cluster) waitValue(id uint64, key, want string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if v, err := c.bases[id].Get([]byte("d" + key)); err == nil && string(v) == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("node %d never applied %s=%s", id, key, want)
}

// TestNodesReplicateAcrossRestartsAndLeaderLoss writes through the leader
// while followers and leaders are restarted over their engines and cut
// off: every acknowledged write reaches every node, and the log compacts.
func TestNodesReplicateAcrossRestartsAndLeaderLoss(t *testing.T) {
	c := newCluster(t)
	for i := 0; i < 30; i++ {
		if err := c.put(fmt.Sprint(i), fmt.Sprint(i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		switch i {
		case 5, 15:
			id := c.leader().cfg.ID%3 + 1 // a follower
			c.node(id).close()
			c.startNode(id)
		case 10, 20:
			old := c.leader()
			c.mu.Lock()
			c.cut[old.cfg.ID] = true
			c.mu.Unlock()
			if c.leader() == old {
				t.Fatal("the cut-off leader is still writable")
			}
			c.mu.Lock()
			c.cut = map[uint64]bool{}
			c.mu.Unlock()
			old.close()
			c.startNode(old.cfg.ID)
		}
	}
	for id := uint64(1); id <= 3; id++ {
		for i := 0; i < 30; i++ {
			c.waitValue(id, fmt.Sprint(i), fmt.Sprint(i))
		}
	}
	if first, _ := c.node(c.leader().cfg.ID).ls.FirstIndex(); first <= 1 {
		t.Fatalf("the log never compacted (first index %d)", first)
	}
}

func TestProposeOnFollowerIsRefused(t *testing.T) {
	c := newCluster(t)
	l := c.leader()
	follower := c.node(l.cfg.ID%3 + 1)
	err := follower.propose(context.Background(), &entry{kind: kindNoop})
	if err != ErrNotPrimary {
		t.Fatalf("propose on a follower: %v, want ErrNotPrimary", err)
	}
}

// shipSnapshot does what the transport does for a snapshot message:
// stage the sender's data on the receiver, then deliver the message.
func (c *cluster) shipSnapshot(m *pb.Message, to *node) {
	from, dst := c.node(m.GetFrom()), c.bases[m.GetTo()]
	snap := c.bases[m.GetFrom()].NewSnapshot()
	defer snap.Close()
	a, err := readApplied(snap)
	ok := err == nil && stageBegin(dst) == nil &&
		readSnapshot(snap, func(kvs [][]byte) error { return stageChunk(dst, kvs) }) == nil &&
		to.step(snapshotMessage(m, a)) == nil
	from.reportSnapshot(m.GetTo(), ok)
}
