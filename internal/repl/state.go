package repl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/raft/v3"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// More errors the command layer gives codes.
var (
	// ErrNotPrimaryNoSecondaryOk: a read on a secondary without a read
	// preference that allows it.
	ErrNotPrimaryNoSecondaryOk = errors.New("not primary and secondaryOk=false")
	// ErrNotPrimaryOrSecondary: this member cannot serve reads now.
	ErrNotPrimaryOrSecondary = errors.New("node is not in primary or recovering state")
	// ErrWriteConcernTimeout: wtimeout passed before enough members had
	// the write.
	ErrWriteConcernTimeout = errors.New("waiting for replication timed out")
	// ErrUnsatisfiableWriteConcern: w asks for more members than exist.
	ErrUnsatisfiableWriteConcern = errors.New("not enough data-bearing nodes")
)

// State is a member's state as MongoDB names them.
type State int

// The states replSetGetStatus reports.
const (
	StateStartup   State = 0
	StatePrimary   State = 1
	StateSecondary State = 2
	StateStartup2  State = 5
	StateUnknown   State = 6
	StateDown      State = 8
	StateRemoved   State = 10
)

var stateNames = map[State]string{
	StateStartup: "STARTUP", StatePrimary: "PRIMARY", StateSecondary: "SECONDARY",
	StateStartup2: "STARTUP2", StateUnknown: "UNKNOWN", StateDown: "(not reachable/healthy)", StateRemoved: "REMOVED",
}

// Writable reports whether this member is a primary taking writes.
func (rs *Replica) Writable() bool {
	n := rs.node()
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.writable
}

// myState is this member's state.
func (rs *Replica) myState() State {
	n, c := rs.node(), rs.Config()
	switch {
	case n == nil:
		return StateStartup
	case c == nil:
		return StateStartup2
	}
	if _, ok := c.member(rs.myID); !ok {
		return StateRemoved
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.writable {
		return StatePrimary
	}
	return StateSecondary
}

// CheckRead says whether this member may serve a read; secondaryOk is
// whether the client's read preference allows a secondary. As mongod, a
// read that did not opt in is refused by any member but the primary
// (13435) before the member's state is looked at; one that did is refused
// (13436) by a member neither primary nor secondary, e.g. one not yet
// initiated.
func (rs *Replica) CheckRead(secondaryOk bool) error {
	switch state := rs.myState(); {
	case state == StatePrimary:
		return nil
	case !secondaryOk:
		return ErrNotPrimaryNoSecondaryOk
	case state != StateSecondary:
		return ErrNotPrimaryOrSecondary
	}
	if off := rs.ClockOffset(); off > rs.cfg.MaxClockOffset || -off > rs.cfg.MaxClockOffset {
		return &ClockOffsetError{Offset: off, Bound: rs.cfg.MaxClockOffset}
	}
	return nil
}

// CheckPrimaryOrSecondary says whether this member may run a command
// mongod keeps from a member in maintenance (its maintenanceOk is false):
// only a primary or a secondary does; one not yet initiated (STARTUP,
// STARTUP2) or removed from the set refuses with 13436. mongod says "node
// is recovering" instead for a member in RECOVERING, a state no Mayfly
// member is ever in.
func (rs *Replica) CheckPrimaryOrSecondary() error {
	switch rs.myState() {
	case StatePrimary, StateSecondary:
		return nil
	}
	return ErrNotPrimaryOrSecondary
}

// ClockOffsetError: this member's clock is too far from the primary's for
// it to decide expiry, so it serves no reads (NotPrimaryOrSecondary).
type ClockOffsetError struct{ Offset, Bound time.Duration }

func (e *ClockOffsetError) Error() string {
	return fmt.Sprintf("node is not in primary or recovering state: its clock is %v off the primary's, beyond the %v bound (maxClockOffset), so it cannot tell what has expired", e.Offset.Round(time.Millisecond), e.Bound)
}

// CheckWrite says whether this member may take a write.
func (rs *Replica) CheckWrite() error {
	if rs.Writable() {
		return nil
	}
	return ErrNotPrimary
}

// OpTime is the (timestamp, term) of the last applied entry and when it was
// written.
func (rs *Replica) OpTime() (changestream.Timestamp, int64, time.Time) {
	n := rs.node()
	if n == nil {
		return changestream.Timestamp{}, -1, time.Time{}
	}
	n.mu.Lock()
	term := n.term
	n.mu.Unlock()
	return n.appliedTimestamp(), int64(term), time.UnixMilli(n.appliedWal.Load())
}

// hello returns the replica set fields of a hello reply and whether this
// member is a writable primary; HelloAt gives them with their counter.
func (rs *Replica) hello() (bool, bson.D) {
	c := rs.Config()
	if c == nil {
		return false, bson.D{{Key: "isreplicaset", Value: true}, {Key: "secondary", Value: false}, {Key: "info", Value: "Does not have a valid replica set config"}}
	}
	state := rs.myState()
	out := bson.D{{Key: "hosts", Value: hostsOf(c, func(m Member) bool { return m.Priority > 0 && !m.Hidden })}}
	if passives := hostsOf(c, func(m Member) bool { return m.Priority == 0 && !m.Hidden }); len(passives) > 0 {
		out = append(out, bson.E{Key: "passives", Value: passives})
	}
	out = append(out, bson.E{Key: "setName", Value: c.ID}, bson.E{Key: "setVersion", Value: int32(c.Version)})
	out = append(out, bson.E{Key: "secondary", Value: state == StateSecondary})
	n := rs.node()
	st := n.status()
	if leader, ok := c.member(st.leader); ok && (st.leader != rs.myID || st.writable) {
		out = append(out, bson.E{Key: "primary", Value: leader.Host})
	}
	if me, ok := c.member(rs.myID); ok {
		out = append(out, bson.E{Key: "me", Value: me.Host})
		if me.Hidden {
			out = append(out, bson.E{Key: "hidden", Value: true})
		}
		if me.Priority == 0 {
			out = append(out, bson.E{Key: "passive", Value: true})
		}
	}
	if state == StatePrimary {
		out = append(out, bson.E{Key: "electionId", Value: electionID(st.term)})
	}
	ts, term, wall := rs.OpTime()
	opTime := bson.D{{Key: "ts", Value: bson.Timestamp{T: ts.T, I: ts.I}}, {Key: "t", Value: term}}
	out = append(out, bson.E{Key: "lastWrite", Value: bson.D{
		{Key: "opTime", Value: opTime}, {Key: "lastWriteDate", Value: bson.NewDateTimeFromTime(wall)},
		{Key: "majorityOpTime", Value: opTime}, {Key: "majorityWriteDate", Value: bson.NewDateTimeFromTime(wall)},
	}})
	return state == StatePrimary, out
}

// HelloAt is Hello with the topologyVersion counter its reply carries.
// The counter is read before the fields, and every change of role,
// leader or config moves the counter only after it is made, so a reply is
// never older than its counter: a change that lands while the reply is
// built leaves the counter behind it, and the driver's next awaitable
// hello, which carries that counter, returns at once. Read the other way
// round, a promotion between the two reads gave a reply saying
// "secondary" at the promotion's counter, and the Go driver awaited the
// next change for its whole heartbeatFrequency (10 s) before it saw the
// new primary (TestReplicaSetFailoverUnderLoad, docs/design/0007).
func (rs *Replica) HelloAt() (writable bool, fields bson.D, counter int64) {
	_, counter = rs.TopologyChanges()
	if rs.betweenHelloReads != nil {
		rs.betweenHelloReads()
	}
	writable, fields = rs.hello()
	return writable, fields, counter
}

// electionId orders primaries for drivers: 7fffffff then the term.
func electionID(term uint64) bson.ObjectID {
	var id bson.ObjectID
	id[0], id[1], id[2], id[3] = 0x7f, 0xff, 0xff, 0xff
	for i := 0; i < 8; i++ {
		id[4+i] = byte(term >> (56 - 8*i))
	}
	return id
}

func hostsOf(c *SetConfig, keep func(Member) bool) bson.A {
	out := bson.A{}
	for _, m := range c.Members {
		if keep(m) {
			out = append(out, m.Host)
		}
	}
	return out
}

// Status is replSetGetStatus's reply (without ok).
func (rs *Replica) Status() (bson.D, error) {
	c := rs.Config()
	if c == nil {
		return nil, ErrNotYetInitialized
	}
	n := rs.node()
	st := n.status()
	now := rs.cfg.Clock.Now()
	ts, term, wall := rs.OpTime()
	opTime := bson.D{{Key: "ts", Value: bson.Timestamp{T: ts.T, I: ts.I}}, {Key: "t", Value: term}}
	wallDate := bson.NewDateTimeFromTime(wall)
	members := bson.A{}
	for _, m := range c.Members {
		members = append(members, rs.memberStatus(m, st, opTime, wallDate, now))
	}
	return bson.D{
		{Key: "set", Value: c.ID}, {Key: "date", Value: bson.NewDateTimeFromTime(now)},
		{Key: "myState", Value: int32(rs.myState())}, {Key: "term", Value: int64(st.term)},
		{Key: "heartbeatIntervalMillis", Value: int64(rs.cfg.Tick / time.Millisecond)},
		{Key: "majorityVoteCount", Value: int32(c.majority())}, {Key: "writeMajorityCount", Value: int32(c.majority())},
		{Key: "votingMembersCount", Value: int32(votingMembers(c))}, {Key: "writableVotingMembersCount", Value: int32(votingMembers(c))},
		{Key: "optimes", Value: bson.D{
			{Key: "lastCommittedOpTime", Value: opTime}, {Key: "lastCommittedWallTime", Value: wallDate},
			{Key: "readConcernMajorityOpTime", Value: opTime}, {Key: "readConcernMajorityWallTime", Value: wallDate},
			{Key: "appliedOpTime", Value: opTime}, {Key: "durableOpTime", Value: opTime},
			{Key: "lastAppliedWallTime", Value: wallDate}, {Key: "lastDurableWallTime", Value: wallDate},
		}},
		{Key: "members", Value: members},
	}, nil
}

func votingMembers(c *SetConfig) int {
	v := 0
	for _, m := range c.Members {
		if m.Votes > 0 {
			v++
		}
	}
	return v
}

func (rs *Replica) memberStatus(m Member, st status, opTime bson.D, wall bson.DateTime, now time.Time) bson.D {
	id := m.RaftID()
	state := StateSecondary
	switch {
	case id == rs.myID:
		state = rs.myState()
	case id == st.leader:
		state = StatePrimary
	case st.progress != nil && !rs.recentlyActive(id):
		state = StateDown
	}
	d := bson.D{
		{Key: "_id", Value: int32(m.ID)}, {Key: "name", Value: m.Host},
		{Key: "health", Value: healthOf(state)}, {Key: "state", Value: int32(state)}, {Key: "stateStr", Value: stateNames[state]},
	}
	if id == rs.myID {
		d = append(d, bson.E{Key: "uptime", Value: int64(now.Sub(rs.started) / time.Second)})
	}
	d = append(d, bson.E{Key: "optime", Value: opTime}, bson.E{Key: "optimeDate", Value: wall},
		bson.E{Key: "lastAppliedWallTime", Value: wall}, bson.E{Key: "lastDurableWallTime", Value: wall})
	if st.progress != nil {
		d = append(d, bson.E{Key: "appliedIndex", Value: int64(st.progress[id])})
	}
	d = append(d, bson.E{Key: "configVersion", Value: int32(rs.Config().Version)}, bson.E{Key: "configTerm", Value: int64(st.term)})
	if id == rs.myID {
		d = append(d, bson.E{Key: "self", Value: true})
		if err := rs.CheckRead(true); err != nil && state == StateSecondary {
			d = append(d, bson.E{Key: "infoMessage", Value: err.Error()})
		}
	}
	return d
}

func healthOf(s State) float64 {
	if s == StateDown {
		return 0
	}
	return 1
}

// recentlyActive reports whether the primary heard from member id within
// an election timeout.
func (rs *Replica) recentlyActive(id uint64) bool {
	n := rs.node()
	n.mu.Lock()
	defer n.mu.Unlock()
	pr, ok := n.rn.Status().Progress[id]
	return ok && pr.RecentActive
}

// WaitForMembers waits until w members (w > 1) have applied everything
// this member has, or wtimeout passes (0: no limit).
func (rs *Replica) WaitForMembers(ctx context.Context, w int, wtimeout time.Duration) error {
	c := rs.Config()
	if c == nil || w > len(c.Members) {
		return ErrUnsatisfiableWriteConcern
	}
	n := rs.node()
	target := n.applied.Load()
	if wtimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wtimeout)
		defer cancel()
	}
	for {
		st := n.status()
		if st.role != raft.StateLeader {
			return ErrStateChange
		}
		if countAtLeast(st.progress, target) >= w {
			return nil
		}
		select {
		case <-ctx.Done():
			return ErrWriteConcernTimeout
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func countAtLeast(progress map[uint64]uint64, index uint64) int {
	n := 0
	for _, m := range progress {
		if m >= index {
			n++
		}
	}
	return n
}

// StepDown hands leadership to a caught-up electable member within
// catchUp, and keeps this member from being elected for secs.
func (rs *Replica) StepDown(ctx context.Context, secs, catchUp time.Duration) error {
	if !rs.Writable() {
		return ErrNotPrimary
	}
	n := rs.node()
	deadline := rs.cfg.Clock.Now().Add(catchUp)
	rs.mu.Lock()
	rs.frozen = rs.cfg.Clock.Now().Add(secs)
	rs.mu.Unlock()
	for {
		st := n.status()
		if to := rs.caughtUp(st); to != 0 {
			n.transferLeadership(to)
			return rs.waitNotLeader(ctx, n)
		}
		if rs.cfg.Clock.Now().After(deadline) {
			rs.mu.Lock()
			rs.frozen = time.Time{}
			rs.mu.Unlock()
			return ErrNoCaughtUpSecondary
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ErrNoCaughtUpSecondary: stepDown found no electable secondary caught up.
var ErrNoCaughtUpSecondary = errors.New("no electable secondaries caught up")

func (rs *Replica) caughtUp(st status) uint64 {
	c := rs.Config()
	ids := make([]uint64, 0, len(st.progress))
	for id := range st.progress {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		m, ok := c.member(id)
		if id != rs.myID && ok && m.Priority > 0 && m.Votes > 0 && st.progress[id] >= st.applied {
			return id
		}
	}
	return 0
}

func (rs *Replica) waitNotLeader(ctx context.Context, n *node) error {
	for range 300 {
		if n.status().role != raft.StateLeader {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("repl: leadership transfer did not finish")
}

// Freeze keeps this member from becoming primary for d (0 unfreezes).
func (rs *Replica) Freeze(d time.Duration) error {
	if rs.Writable() {
		return ErrNotPrimaryOrSecondaryFreeze
	}
	rs.mu.Lock()
	rs.frozen = rs.cfg.Clock.Now().Add(d)
	rs.mu.Unlock()
	return nil
}

// ErrNotPrimaryOrSecondaryFreeze: replSetFreeze on a primary.
var ErrNotPrimaryOrSecondaryFreeze = errors.New("cannot freeze node when primary or running for election. state: Primary")

// Reconfig replaces the config (version must be the current one plus
// one), on the primary.
func (rs *Replica) Reconfig(doc bson.D) error {
	cur := rs.Config()
	if cur == nil {
		return ErrNotYetInitialized
	}
	if !rs.Writable() {
		return ErrNotPrimary
	}
	c, err := ParseConfig(doc)
	if err != nil {
		return err
	}
	if c.ID != cur.ID {
		return &IncompatibleConfigError{fmt.Sprintf("New and old configurations differ in replica set name; old was %s, and new is %s", cur.ID, c.ID)}
	}
	if c.Version <= cur.Version {
		return &IncompatibleConfigError{fmt.Sprintf("New replica set configuration version must be greater than old, but %d is not greater than %d for replica set %s", c.Version, cur.Version, c.ID)}
	}
	if err := checkHostsKeepIDs(cur, c); err != nil {
		return err
	}
	return rs.proposeConfig(c)
}

// IncompatibleConfigError is NewReplicaSetConfigurationIncompatible (103).
type IncompatibleConfigError struct{ Msg string }

func (e *IncompatibleConfigError) Error() string { return e.Msg }

func checkHostsKeepIDs(cur, next *SetConfig) error {
	for _, m := range next.Members {
		if old, ok := cur.memberByHost(m.Host); ok && old.ID != m.ID {
			return &IncompatibleConfigError{fmt.Sprintf("New and old configurations both have members with host of %s but in the new configuration the _id field is %d and in the old configuration it is %d for replica set %s", m.Host, m.ID, old.ID, next.ID)}
		}
	}
	return nil
}

// ServerStatus is serverStatus's repl section: hello's replica set fields,
// and Mayfly's own figures of the raft log under "raft".
func (rs *Replica) ServerStatus() bson.D {
	writable, fields := rs.hello()
	out := append(bson.D{{Key: "isWritablePrimary", Value: writable}}, fields...)
	raftDoc := bson.D{
		{Key: "snapshotsSent", Value: rs.snapshotsSent.Load()},
		{Key: "snapshotsInstalled", Value: rs.snapshotsInstalled.Load()},
		{Key: "clockOffsetMillis", Value: rs.ClockOffset().Milliseconds()},
	}
	if n := rs.node(); n != nil {
		st := n.status()
		first, _ := rs.ls.FirstIndex()
		last, _ := rs.ls.LastIndex()
		raftDoc = append(raftDoc,
			bson.E{Key: "term", Value: int64(st.term)}, bson.E{Key: "commitIndex", Value: int64(st.commit)},
			bson.E{Key: "appliedIndex", Value: int64(st.applied)},
			bson.E{Key: "firstLogIndex", Value: int64(first)}, bson.E{Key: "lastLogIndex", Value: int64(last)})
	}
	return append(out, bson.E{Key: "raft", Value: raftDoc})
}
