// Package repl makes several Mayfly processes one replica set on etcd raft:
// the primary evaluates each write as a standalone server would and
// proposes the resulting storage batch; every member applies committed
// entries only, so nothing a client reads is ever rolled back. The raft
// log, its hard state and the applied index live in the same engine as the
// documents. Design notes: docs/design/0007-replica-sets.md.
package repl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"google.golang.org/protobuf/proto"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
)

// defaultRetainEntries is RetainEntries unless configured.
const defaultRetainEntries = 20000

// Config configures a member. SetName and Self are required.
type Config struct {
	// SetName is --replSet.
	SetName string
	// Self is the address this member listens on, host:port as clients
	// and other members reach it.
	Self string
	Base Base
	// Tick is raft's clock (default 100ms); ElectionTicks ticks without a
	// leader start an election (default 6: 0.6–1.2 s after the primary
	// goes silent, raft's timeout being randomised between 1× and 2×).
	Tick          time.Duration
	ElectionTicks int
	// RetainEntries is how many applied entries the log keeps (default
	// 20000); a member further behind catches up from a snapshot.
	RetainEntries uint64
	// MaxClockOffset is how far this member's clock may be from the
	// primary's before it stops serving reads (default 250ms): exact
	// expiry on a secondary is only as exact as its clock.
	MaxClockOffset time.Duration
	// Changes, when set, is notified each time this member has applied
	// entries: change streams wait on it for new events.
	Changes *changestream.Signal
	// Dial connects to another member (default plain TCP).
	Dial   Dialer
	Clock  clock.Clock
	Logger *slog.Logger
}

// Errors of the replica set commands, with MongoDB's meaning; the command
// layer gives them codes.
var (
	ErrAlreadyInitialized = errors.New("already initialized")
	ErrNotYetInitialized  = errors.New("no replset config has been received")
)

// Replica is this process's membership in a replica set.
type Replica struct {
	cfg       Config
	ls        *logStore
	transport *transport

	mu       sync.Mutex // guards the fields below
	n        *node
	myID     uint64
	set      *SetConfig
	topology chan struct{} // closed and replaced on every change
	// topologyCounter is topologyVersion.counter: it moves with every
	// change of role, leader or config.
	topologyCounter int64
	frozen          time.Time // no election win until then (replSetFreeze, stepDown)

	configApplied atomic.Bool // a config entry is in the applied log
	hooks         Hooks
	started       time.Time

	// clockOffset is the primary's clock minus this member's, measured on
	// each message from the primary (nanoseconds; loopback and LAN
	// latency are far below the bound it is compared with).
	clockOffset atomic.Int64
	// partitioned holds the members this one neither sends to nor hears
	// from (a test fault; see Partition).
	partitioned sync.Map

	snapshotsSent, snapshotsInstalled atomic.Int64
}

// Open reads this member's replica set state from storage. It does not
// start raft: call Start once the layers above are ready for entries.
func Open(cfg Config) (*Replica, error) {
	cfg = withDefaults(cfg)
	ls, err := openLogStore(cfg.Base)
	if err != nil {
		return nil, err
	}
	if err := resumeInstall(cfg.Base, ls); err != nil {
		return nil, err
	}
	rs := &Replica{cfg: cfg, ls: ls, topology: make(chan struct{}), started: cfg.Clock.Now()}
	rs.transport = newTransport(rs)
	if v, err := cfg.Base.Get(identityKey); err == nil && len(v) == 8 {
		rs.myID = binary.BigEndian.Uint64(v)
	}
	if raw, err := cfg.Base.Get(configKey); err == nil {
		rs.adoptConfig(raw)
	}
	return rs, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Tick == 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.ElectionTicks == 0 {
		cfg.ElectionTicks = 6
	}
	if cfg.RetainEntries == 0 {
		cfg.RetainEntries = defaultRetainEntries
	}
	if cfg.Dial == nil {
		cfg.Dial = plainDial
	}
	if cfg.MaxClockOffset == 0 {
		cfg.MaxClockOffset = 250 * time.Millisecond
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Self = strings.ToLower(cfg.Self)
	return cfg
}

// Engine is the engine the docstore must write through.
func (rs *Replica) Engine() storage.Engine { return &engine{Base: rs.cfg.Base, rs: rs} }

// Start starts raft if this member already belongs to a set.
func (rs *Replica) Start(h Hooks) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.hooks = h
	if rs.myID == 0 {
		return nil
	}
	return rs.startNodeLocked()
}

func (rs *Replica) startNodeLocked() error {
	if rs.ls == nil {
		ls, err := openLogStore(rs.cfg.Base)
		if err != nil {
			return err
		}
		rs.ls = ls
	}
	n, err := newNode(nodeConfig{
		ID: rs.myID, Tick: rs.cfg.Tick, ElectionTicks: rs.cfg.ElectionTicks, RetainEntries: rs.cfg.RetainEntries,
		Clock: rs.cfg.Clock, Logger: rs.cfg.Logger, Changes: rs.cfg.Changes,
	}, rs.cfg.Base, rs.ls, hookFilter{rs})
	if err != nil {
		return err
	}
	n.onCfg = rs.configEntryApplied
	n.onChange = rs.changed
	n.onConfChange = func() { go rs.syncMembership() }
	rs.n = n
	if rs.set != nil {
		rs.learnAddrs(rs.set)
	}
	n.start(rs.transport.send)
	return nil
}

// Close stops raft and the transport.
func (rs *Replica) Close() {
	if n := rs.node(); n != nil {
		n.close()
	}
	rs.transport.close()
}

func (rs *Replica) node() *node {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.n
}

// SetName is --replSet.
func (rs *Replica) SetName() string { return rs.cfg.SetName }

// Config returns the current config, or nil before initiation.
func (rs *Replica) Config() *SetConfig {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.set
}

// adoptConfig makes raw (a config document) the current config.
func (rs *Replica) adoptConfig(raw []byte) {
	var doc bson.D
	if err := bson.Unmarshal(raw, &doc); err != nil {
		rs.cfg.Logger.Error("stored replica set config is unreadable", "err", err)
		return
	}
	c, err := ParseConfig(doc)
	if err != nil {
		rs.cfg.Logger.Error("stored replica set config is invalid", "err", err)
		return
	}
	rs.mu.Lock()
	rs.set = c
	rs.mu.Unlock()
	rs.learnAddrs(c)
	rs.changed()
}

func (rs *Replica) learnAddrs(c *SetConfig) {
	for _, m := range c.Members {
		if m.RaftID() != rs.myID {
			rs.transport.setAddr(m.RaftID(), m.Host)
		}
	}
}

func (rs *Replica) configEntryApplied(raw []byte) {
	rs.configApplied.Store(true)
	rs.adoptConfig(raw)
	go rs.syncMembership()
}

// changed wakes awaitable hellos.
func (rs *Replica) changed() {
	rs.mu.Lock()
	rs.topologyCounter++
	close(rs.topology)
	rs.topology = make(chan struct{})
	rs.mu.Unlock()
}

// TopologyChanges returns a channel closed at the next change of role or
// config, and a counter that moves with each.
func (rs *Replica) TopologyChanges() (<-chan struct{}, int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.topology, rs.topologyCounter
}

// Initiate makes a new set from doc (nil: a set of this member alone).
func (rs *Replica) Initiate(doc bson.D) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.myID != 0 || rs.set != nil {
		return ErrAlreadyInitialized
	}
	if doc == nil {
		doc = bson.D{{Key: "_id", Value: rs.cfg.SetName}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: rs.cfg.Self}}}}}
	}
	c, err := ParseConfig(doc)
	if err != nil {
		return err
	}
	if c.ID != rs.cfg.SetName {
		return configErrorf("Attempting to initiate a replica set with name %s, but command line reports %s; rejecting", c.ID, rs.cfg.SetName)
	}
	me, ok := c.memberByHost(rs.cfg.Self)
	if !ok {
		return configErrorf("No host described in new configuration with {version: %d, term: 0} for replica set %s maps to this node", c.Version, c.ID)
	}
	c.Term = 0
	return rs.bootstrapLocked(c, me)
}

func (rs *Replica) bootstrapLocked(c *SetConfig, me Member) error {
	raw, err := bson.Marshal(c.Doc())
	if err != nil {
		return err
	}
	if err := rs.persistIdentity(me.RaftID(), raw); err != nil {
		return err
	}
	rs.myID, rs.set = me.RaftID(), c
	if err := rs.startNodeLocked(); err != nil {
		return err
	}
	var voters []uint64
	for _, m := range c.Members {
		if m.Votes > 0 {
			voters = append(voters, m.RaftID())
		}
	}
	if err := rs.n.bootstrap(voters); err != nil {
		return err
	}
	rs.n.poke()
	go rs.changed()
	return nil
}

func (rs *Replica) persistIdentity(id uint64, config []byte) error {
	b := rs.cfg.Base.NewBatch()
	defer b.Close()
	if err := b.Set(identityKey, binary.BigEndian.AppendUint64(nil, id)); err != nil {
		return err
	}
	if config != nil {
		if err := b.Set(configKey, config); err != nil {
			return err
		}
	}
	return b.Commit(true)
}

// memberCommand starts a command from this member to member to.
func (rs *Replica) memberCommand(name string, to uint64) bson.D {
	return bson.D{
		{Key: name, Value: int32(1)}, {Key: "$db", Value: "admin"}, {Key: "setName", Value: rs.cfg.SetName},
		{Key: "from", Value: int64(rs.myID)}, {Key: "fromHost", Value: rs.self()}, {Key: "to", Value: int64(to)},
		{Key: "sentAt", Value: rs.cfg.Clock.Now().UnixNano()},
	}
}

func (rs *Replica) self() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.cfg.Self
}

// memberHeader is the part of replSetRaft and replSetSnapshot that names
// who talks to whom.
type memberHeader struct {
	setName  string
	from, to uint64
	fromHost string
	sentAt   int64
}

func parseHeader(body bson.D) (memberHeader, error) {
	var h memberHeader
	for _, e := range body {
		switch e.Key {
		case "setName":
			h.setName, _ = e.Value.(string)
		case "from":
			v, _ := e.Value.(int64)
			h.from = uint64(v)
		case "to":
			v, _ := e.Value.(int64)
			h.to = uint64(v)
		case "fromHost":
			h.fromHost, _ = e.Value.(string)
		case "sentAt":
			h.sentAt, _ = e.Value.(int64)
		}
	}
	if h.from == 0 || h.to == 0 || h.fromHost == "" {
		return h, errors.New("repl: member message without from, to or fromHost")
	}
	return h, nil
}

// accept checks a message from another member and, on a member not yet in
// a set, joins the set it names with the ID it was given.
func (rs *Replica) accept(body bson.D) (*node, error) {
	h, err := parseHeader(body)
	if err != nil {
		return nil, err
	}
	if h.setName != rs.cfg.SetName {
		return nil, fmt.Errorf("repl: message for replica set %q, this member is in %q", h.setName, rs.cfg.SetName)
	}
	if _, cut := rs.partitioned.Load(h.from); cut {
		return nil, fmt.Errorf("repl: member %d is partitioned away", h.from-1)
	}
	rs.transport.setAddr(h.from, h.fromHost)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.myID == 0 {
		if err := rs.persistIdentity(h.to, nil); err != nil {
			return nil, err
		}
		rs.myID = h.to
		if err := rs.startNodeLocked(); err != nil {
			return nil, err
		}
		rs.cfg.Logger.Info("joined replica set", "set", rs.cfg.SetName, "member", h.to-1, "via", h.fromHost)
	}
	if h.to != rs.myID {
		return nil, fmt.Errorf("repl: message for member %d, this is member %d", h.to-1, rs.myID-1)
	}
	if rs.n.leaderID() == h.from && h.sentAt != 0 {
		rs.clockOffset.Store(h.sentAt - rs.cfg.Clock.Now().UnixNano())
	}
	return rs.n, nil
}

// Partition makes this member drop every message to and from the members
// at hosts (none: heal). It is a fault for tests, reached only through a
// test command.
func (rs *Replica) Partition(hosts []string) {
	rs.partitioned.Clear()
	c := rs.Config()
	if c == nil {
		return
	}
	for _, h := range hosts {
		if m, ok := c.memberByHost(h); ok {
			rs.partitioned.Store(m.RaftID(), true)
		}
	}
}

// ClockOffset is the primary's clock minus this member's, as last seen.
func (rs *Replica) ClockOffset() time.Duration { return time.Duration(rs.clockOffset.Load()) }

// Receive takes a replSetRaft command's messages.
func (rs *Replica) Receive(body bson.D) error {
	n, err := rs.accept(body)
	if err != nil {
		return err
	}
	for _, e := range body {
		if e.Key != "msgs" {
			continue
		}
		arr, _ := e.Value.(bson.A)
		for _, item := range arr {
			bin, _ := item.(bson.Binary)
			m := &pb.Message{}
			if err := proto.Unmarshal(bin.Data, m); err != nil {
				return fmt.Errorf("repl: decode raft message: %w", err)
			}
			_ = n.step(m) // a message raft refuses (stale term) is dropped
		}
	}
	return nil
}

// ReceiveSnapshot takes one replSetSnapshot command.
func (rs *Replica) ReceiveSnapshot(body bson.D) error {
	n, err := rs.accept(body)
	if err != nil {
		return err
	}
	phase, _ := lookupString(body, "phase")
	switch phase {
	case "begin":
		return stageBegin(rs.cfg.Base)
	case "data":
		v, _ := bsonutil.Field(body, "kvs")
		arr, _ := v.(bson.A)
		kvs := make([][]byte, len(arr))
		for i, item := range arr {
			bin, _ := item.(bson.Binary)
			kvs[i] = bin.Data
		}
		return stageChunk(rs.cfg.Base, kvs)
	case "end":
		v, _ := bsonutil.Field(body, "msg")
		bin, _ := v.(bson.Binary)
		m := &pb.Message{}
		if err := proto.Unmarshal(bin.Data, m); err != nil {
			return err
		}
		return n.step(m)
	}
	return fmt.Errorf("repl: unknown snapshot phase %q", phase)
}

func lookupString(d bson.D, key string) (string, bool) {
	v, ok := bsonutil.Field(d, key)
	s, _ := v.(string)
	return s, ok
}

// propose sends a write entry through raft.
func (rs *Replica) propose(ctx context.Context, ent *entry) error {
	n := rs.node()
	if n == nil {
		return ErrNotPrimary
	}
	return n.propose(ctx, ent)
}

// hookFilter passes the node's events to the layers above and keeps the
// replica set's own state (config, topology) current.
type hookFilter struct{ rs *Replica }

func (f hookFilter) Applied(d []CountDelta, catalog bool) {
	if h := f.rs.hooks; h != nil {
		h.Applied(d, catalog)
	}
}

// errNoExpirer is an entry with expiries on a member with nothing to
// apply them: a programming error, which stops the member's raft.
var errNoExpirer = errors.New("repl: no expirer to apply expiries")

func (f hookFilter) ApplyExpiries(b storage.Batch, keys [][]byte) ([][]byte, func(), error) {
	if h := f.rs.hooks; h != nil {
		return h.ApplyExpiries(b, keys)
	}
	return nil, nil, errNoExpirer
}

func (f hookFilter) Reloaded() {
	f.rs.snapshotsInstalled.Add(1)
	f.rs.cfg.Logger.Info("installed a snapshot from the primary")
	if h := f.rs.hooks; h != nil {
		h.Reloaded()
	}
}

func (f hookFilter) Promoted() {
	f.rs.changed()
	f.rs.cfg.Logger.Info("this member is now primary", "set", f.rs.cfg.SetName)
	go func() {
		// The config goes into the log first: a member that hands
		// leadership on must not leave a successor without it.
		if !f.rs.configApplied.Load() {
			f.rs.replicateConfig()
		}
		f.rs.yieldWhileIneligible()
	}()
	if h := f.rs.hooks; h != nil {
		h.Promoted()
	}
}

func (f hookFilter) Demoted() {
	f.rs.changed()
	f.rs.cfg.Logger.Info("this member stepped down", "set", f.rs.cfg.SetName)
	if h := f.rs.hooks; h != nil {
		h.Demoted()
	}
}

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
		if err == nil {
			return
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

// SetSelf sets the address this member listens on, once it is known.
func (rs *Replica) SetSelf(addr string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.cfg.Self = strings.ToLower(addr)
}

// SetDialer sets how this member connects to the others, once access
// control and TLS are loaded; call it before Start.
func (rs *Replica) SetDialer(d Dialer) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.cfg.Dial = d
}
