// Package activity tracks the server's operations in flight, for
// db.currentOp() ($currentOp), and holds the database profiler's settings,
// for the profile command and <db>.system.profile.
package activity

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

// Op is one operation in flight.
type Op struct {
	ID   int64
	Desc string // "conn12" for a client connection, "TTLMonitor" for expiry
	Kind string // "command", "query", "insert", "update", "remove", "getmore"
	NS   string
	// DB, with NS empty, is the database the command ran on: Doc names
	// the namespace from it and the command, so that recording an
	// operation builds no string.
	DB      string
	Command bson.D
	Client  string // remote address, empty for internal work
	ConnID  int64
	// Started is when the operation began by the registry's clock; Begin
	// reads the clock when it is zero, a caller that has read it already
	// sets it.
	Started time.Time
	// Transaction reports the multi-document transaction the operation
	// is a statement of, at now; nil outside one.
	Transaction func(now time.Time) bson.D
	// Progress reports a long operation's progress (an index build's
	// scan); nil for none.
	Progress func() Progress
	cancel   func(cause error) // stops the operation (killOp); nil for internal work
	waiting  bool              // see Registry.Wait
}

// Registry holds the operations in flight.
type Registry struct {
	clock clock.Clock
	mu    sync.Mutex
	next  int64
	ops   map[int64]*Op
	// free are the entries of ended operations, zeroed, for Begin to
	// fill again instead of allocating: an *Op never leaves the registry
	// (Snapshot copies), and is read or written only under mu.
	free []*Op
	// lastClient is when a client operation last began or ended (unix
	// nanoseconds).
	lastClient atomic.Int64
}

// NewRegistry returns an empty registry.
func NewRegistry(c clock.Clock) *Registry {
	if c == nil {
		c = clock.Real{}
	}
	return &Registry{clock: c, ops: map[int64]*Op{}}
}

// Begin records op as running and returns its ID for End.
func (r *Registry) Begin(op Op) int64 {
	if op.Started.IsZero() {
		op.Started = r.clock.Now()
	}
	r.mu.Lock()
	r.next++
	op.ID = r.next
	entry := r.entry()
	*entry = op
	r.ops[op.ID] = entry
	r.mu.Unlock()
	if op.Client != "" {
		r.lastClient.Store(op.Started.UnixNano())
	}
	return op.ID
}

// maxFreeOps bounds the ended entries kept for reuse, so that a burst of
// concurrent operations does not leave its entries held for good.
const maxFreeOps = 1024

// entry is a free entry for an operation; r.mu is held.
func (r *Registry) entry() *Op {
	n := len(r.free)
	if n == 0 {
		return new(Op)
	}
	op := r.free[n-1]
	r.free[n-1] = nil
	r.free = r.free[:n-1]
	return op
}

// SetTransaction makes operation id show the transaction report gives.
func (r *Registry) SetTransaction(id int64, report func(now time.Time) bson.D) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op := r.ops[id]; op != nil {
		op.Transaction = report
	}
}

// End removes a finished operation.
func (r *Registry) End(id int64) {
	if r.remove(id) {
		r.lastClient.Store(r.clock.Now().UnixNano())
	}
}

// EndAt is End for a caller that has read the registry's clock (now) as
// the operation ended.
func (r *Registry) EndAt(id int64, now time.Time) {
	if r.remove(id) {
		r.lastClient.Store(now.UnixNano())
	}
}

// remove forgets operation id and reports whether it was a client's.
func (r *Registry) remove(id int64) bool {
	r.mu.Lock()
	op := r.ops[id]
	client := op != nil && op.Client != ""
	if op != nil {
		delete(r.ops, id)
		if len(r.free) < maxFreeOps {
			*op = Op{} // holds nothing of the operation (its command) while free
			r.free = append(r.free, op)
		}
	}
	r.mu.Unlock()
	return client
}

// Wait marks operation id as waiting for something to happen (an
// awaitData getMore or a change stream with nothing to return yet, an
// awaitable hello) until the returned func is called. A waiting operation
// uses no CPU: it still shows in currentOp, but it does not make the
// server busy for the background work that yields to clients, so one
// idle change stream does not hold the TTL monitor to its pace.
func (r *Registry) Wait(id int64) (resume func()) {
	r.setWaiting(id, true)
	return func() { r.setWaiting(id, false) }
}

// setWaiting sets op id's waiting flag; going from working to waiting or
// back counts as a client operation's end or start for BusyWithin.
func (r *Registry) setWaiting(id int64, waiting bool) {
	r.mu.Lock()
	op := r.ops[id]
	client := op != nil && op.Client != ""
	if op != nil {
		op.waiting = waiting
	}
	r.mu.Unlock() // op may be reused once the lock is released
	if client {
		r.lastClient.Store(r.clock.Now().UnixNano())
	}
}

// BusyWithin reports whether a client operation is in flight or one began
// or ended within the last d. Background work that checks only for
// operations in flight would, on a server with one core, find none while
// it holds the core itself and requests wait unread in their sockets.
func (r *Registry) BusyWithin(d time.Duration) bool {
	return r.Active() > 0 || r.clock.Now().UnixNano()-r.lastClient.Load() <= int64(d)
}

// Active reports how many client operations are in flight and not
// waiting (internal work such as the TTL monitor's is not counted).
func (r *Registry) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, op := range r.ops {
		if op.Client != "" && !op.waiting {
			n++
		}
	}
	return n
}

// Snapshot returns the operations in flight, oldest first.
func (r *Registry) Snapshot() []Op {
	r.mu.Lock()
	out := make([]Op, 0, len(r.ops))
	for _, op := range r.ops {
		out = append(out, *op)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Docs lists the operations in flight, oldest first, as $currentOp shows
// them at now on host.
func (r *Registry) Docs(now time.Time, host string) []bson.D {
	var out []bson.D
	for _, op := range r.Snapshot() {
		out = append(out, op.Doc(now, host))
	}
	return out
}

// OpKind is the "op" field currentOp and the profiler show for the
// command called name, as mongod names it.
func OpKind(name string) string {
	switch name {
	case "find":
		return "query"
	case "insert", "update":
		return name
	case "delete":
		return "remove"
	case "getMore":
		return "getmore"
	}
	return "command"
}

// ISOTime formats t as currentOp's times.
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Doc renders op as $currentOp reports it.
func (op Op) Doc(now time.Time, host string) bson.D {
	running := now.Sub(op.Started)
	d := bson.D{
		{Key: "type", Value: "op"},
		{Key: "host", Value: host},
		{Key: "desc", Value: op.Desc},
	}
	if op.Client != "" {
		d = append(d, bson.E{Key: "connectionId", Value: op.ConnID}, bson.E{Key: "client", Value: op.Client})
	}
	command := op.Command
	if command == nil {
		command = bson.D{}
	}
	if op.Transaction != nil {
		d = append(d, bson.E{Key: "transaction", Value: op.Transaction(now)})
	}
	d = append(d,
		bson.E{Key: "active", Value: true},
		bson.E{Key: "currentOpTime", Value: ISOTime(now)},
		bson.E{Key: "opid", Value: int32(op.ID)},
		bson.E{Key: "secs_running", Value: int64(running / time.Second)},
		bson.E{Key: "microsecs_running", Value: running.Microseconds()},
		bson.E{Key: "op", Value: op.Kind},
		bson.E{Key: "ns", Value: op.namespace()},
		bson.E{Key: "command", Value: command},
	)
	if op.Progress != nil {
		d = append(d, op.Progress().fields()...)
	}
	return append(d,
		bson.E{Key: "numYields", Value: int32(0)},
		bson.E{Key: "waitingForLock", Value: false},
	)
}

// namespace is NS, or the one DB and the command name: db.coll when
// the command's value is a collection, db.$cmd otherwise.
func (op Op) namespace() string {
	if op.NS != "" || op.DB == "" {
		return op.NS
	}
	if len(op.Command) > 0 {
		if coll, ok := op.Command[0].Value.(string); ok {
			return op.DB + "." + coll
		}
	}
	return op.DB + ".$cmd"
}

// Progress is how far a long operation has come: Done of Total units of
// the step Msg names.
type Progress struct {
	Msg         string
	Done, Total int64
}

// fields are currentOp's msg and progress, as mongod's progress meter
// writes them ("Index Build: scanning collection Index Build: scanning
// collection: 640/1000 64%"). Documents inserted during the step can take
// Done past the Total counted at its start; Total then follows it.
func (p Progress) fields() bson.D {
	total := max(p.Total, p.Done)
	pct := int64(0)
	if total > 0 {
		pct = p.Done * 100 / total
	}
	return bson.D{
		{Key: "msg", Value: fmt.Sprintf("%s %s: %d/%d %d%%", p.Msg, p.Msg, p.Done, total, pct)},
		{Key: "progress", Value: bson.D{{Key: "done", Value: p.Done}, {Key: "total", Value: total}}},
	}
}

// ProfileSettings are one database's profiler settings.
type ProfileSettings struct {
	Level      int
	SlowMS     int64
	SampleRate float64
}

// DefaultSlowMS is mongod's slowms default.
const DefaultSlowMS = 100

// Profiler holds per-database profiling settings.
type Profiler struct {
	mu     sync.RWMutex
	levels map[string]ProfileSettings
	slowMS atomic.Int64 // server-wide slowms, shared by all databases as in mongod
	// profiling is whether some database's level is not 0. Every command asks
	// ShouldProfile, almost always with profiling off everywhere: then it
	// answers without the read lock, two atomic writes to a word that all
	// connections share.
	profiling atomic.Bool
}

// NewProfiler returns a profiler with profiling off everywhere.
func NewProfiler() *Profiler {
	p := &Profiler{levels: map[string]ProfileSettings{}}
	p.slowMS.Store(DefaultSlowMS)
	return p
}

// Get returns db's settings.
func (p *Profiler) Get(db string) ProfileSettings {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := p.levels[db]
	s.SlowMS = p.slowMS.Load()
	if s.SampleRate == 0 {
		s.SampleRate = 1
	}
	return s
}

// Set changes db's level; slowms (server-wide) and sampleRate when given.
func (p *Profiler) Set(db string, s ProfileSettings, setSlow bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if setSlow {
		p.slowMS.Store(s.SlowMS)
	}
	p.levels[db] = ProfileSettings{Level: s.Level, SampleRate: s.SampleRate}
	on := false
	for _, l := range p.levels {
		on = on || l.Level != 0
	}
	p.profiling.Store(on)
}

// Slow reports whether an operation that took d is slow (slowms): the
// router logs those.
func (p *Profiler) Slow(d time.Duration) bool {
	return d >= time.Duration(p.slowMS.Load())*time.Millisecond
}

// ShouldProfile reports whether an operation of this duration on db is
// recorded in db.system.profile.
func (p *Profiler) ShouldProfile(db string, d time.Duration) bool {
	if !p.profiling.Load() {
		return false
	}
	s := p.Get(db)
	switch s.Level {
	case 2:
		return true
	case 1:
		return d >= time.Duration(s.SlowMS)*time.Millisecond
	}
	return false
}
