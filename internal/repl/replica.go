package repl

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

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
	// ConfigServer: the member runs with --configsvr, so the config
	// replSetInitiate makes without a document says configsvr: true.
	ConfigServer bool
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

	// betweenHelloReads, a test's hook, runs in HelloAt between the
	// counter's read and the fields': where a topology change is the
	// hardest for the reply to get right.
	betweenHelloReads func()
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

// Hooks tell the layers above about entries this member applied that it
// did not itself propose: a secondary keeps its in-memory state with them.
type Hooks interface {
	// Applied is called after a write entry is in storage.
	Applied(deltas []CountDelta, catalogChanged bool)
	// Reloaded is called after a snapshot replaced everything.
	Reloaded()
	// BeginApply and EndApply bracket each apply from before its storage
	// commit to after the counts it makes known (Applied, an expiry's
	// publish, Reloaded): a reader that pairs the counts with a storage
	// snapshot takes neither inside the span.
	BeginApply()
	EndApply()
	// Expirer applies compact expiries; on every member, the proposer too.
	Expirer
	// Promoted is called when this member becomes a writable primary,
	// Demoted when it stops being one.
	Promoted()
	Demoted()
}

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
		if rs.cfg.ConfigServer {
			doc = append(doc, bson.E{Key: "configsvr", Value: true})
		}
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

func (f hookFilter) BeginApply() {
	if h := f.rs.hooks; h != nil {
		h.BeginApply()
	}
}

func (f hookFilter) EndApply() {
	if h := f.rs.hooks; h != nil {
		h.EndApply()
	}
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
