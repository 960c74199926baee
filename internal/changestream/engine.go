package changestream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// EventBatch is a storage batch that carries change events with its
// writes. AddEvent takes an encoded Event; the batch stamps it when it
// commits, in the same atomic write as the documents. A batch that does
// not implement it keeps no change log (engines under unit tests).
type EventBatch interface {
	AddEvent(ev []byte)
	// RecordsEvents reports whether the change log keeps this batch's
	// events: a standalone server's log is off until a stream first
	// opens (Engine.Record), and a write then pays nothing for events.
	RecordsEvents() bool
}

// recordingKey marks a standalone store whose change log is on.
var recordingKey = keyspace.Recording.Start()

// recordWait bounds how long Record waits for writes begun before it.
const recordWait = 10 * time.Second

// Engine is the storage engine of a standalone server: its batches stamp
// their events with the next cluster timestamp at commit and write them
// into the change log atomically with the documents.
//
// A batch takes its stamp under a mutex but writes its records and
// commits without it, so that concurrent writers' commits overlap instead
// of queueing behind one another's. Batches may then commit out of stamp order: the engine keeps
// the stamps handed out and not yet settled (pending), and Latest moves
// only over a settled prefix of them. Readers read the log up to Latest
// (Feed.Now, RecentLog.Read), so a reader that sees a record sees every
// earlier one. Batches without events (index builds, session records)
// commit without any of this.
type Engine struct {
	storage.Engine
	clock  clock.Clock
	signal *Signal

	mu   sync.Mutex // orders the stamps; guards last and pending
	last Timestamp  // the last stamp handed out; mu
	// pending holds, in stamp order, the stamps handed out since the
	// oldest one not yet settled (its commit returned, well or not);
	// its first entry has sequence number settledSeq+1. mu.
	pending    []pendingStamp
	settledSeq uint64
	// writers keeps WriteEvents' buffers (recordWriter) across commits.
	writers sync.Pool
	// latest is the last stamp of the settled prefix, packed T<<32|I.
	latest atomic.Uint64
	// recording: batches made from now on keep their events; unlogged
	// counts open batches made before, which Record waits out.
	recording atomic.Bool
	unlogged  atomic.Int64
	starting  sync.Mutex // one startLog at a time
}

// NewEngine wraps base. The first stamp follows the last record in the
// log, so timestamps never go back across a restart, whatever the clock.
func NewEngine(base storage.Engine, c clock.Clock, signal *Signal) (*Engine, error) {
	e := &Engine{Engine: base, clock: c, signal: signal}
	last, err := LastTimestamp(base)
	if err != nil {
		return nil, err
	}
	if now := uint32(c.Now().Unix()); now > last.T {
		last = Timestamp{T: now}
	}
	e.last = last
	e.latest.Store(pack(last))
	switch _, err := base.Get(recordingKey); {
	case err == nil:
		e.recording.Store(true)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("changestream: read the log's mark: %w", err)
	}
	return e, nil
}

// startLog writes the mark and, as the log's trim point, a stamp that
// comes before every change it will keep: a stream asked to start earlier
// gets 286, history lost, not a silent gap. Batches made from now on keep
// their events.
func (e *Engine) startLog() error {
	// Two streams opening at once: the second must not move the trim
	// point past writes logged since the first.
	e.starting.Lock()
	defer e.starting.Unlock()
	if e.recording.Load() {
		return nil
	}
	b := e.Engine.NewBatch()
	defer b.Close()
	e.mu.Lock()
	ts := e.next(e.clock.Now())
	seq := e.addPending(ts)
	e.mu.Unlock()
	err := b.Set(recordingKey, []byte{1})
	if err == nil {
		err = b.Set(trimKey, Key(HighWater(ts)))
	}
	if err == nil {
		err = b.Commit(true)
	}
	// Settled either way, as a write's stamp is (stampAndCommit).
	e.settle(seq)
	if err != nil {
		return err
	}
	e.recording.Store(true)
	return nil
}

// Record turns the change log on, for good (the mark survives restarts):
// every write whose batch is made after it returns keeps its events. It
// waits (up to recordWait) for the writes begun before, so that a stream
// that starts at Latest after Record misses none of them.
func (e *Engine) Record() error {
	if e.recording.Load() {
		return nil
	}
	if err := e.startLog(); err != nil {
		return fmt.Errorf("changestream: turn the log on: %w", err)
	}
	deadline := time.Now().Add(recordWait)
	for e.unlogged.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Latest is the timestamp of the last committed write with events: every
// change at or before it is in the log.
func (e *Engine) Latest() Timestamp { return unpack(e.latest.Load()) }

// NewBatch implements storage.Engine.
func (e *Engine) NewBatch() storage.Batch {
	b := &batch{Batch: e.Engine.NewBatch(), eng: e, records: e.recording.Load()}
	if !b.records {
		e.unlogged.Add(1)
	}
	return b
}

// RepairTouches forwards to the base engine, which holds touches back
// only when it can repair them.
func (e *Engine) RepairTouches(repair storage.TouchRepair) error {
	if tr, ok := e.Engine.(storage.TouchRepairer); ok {
		return tr.RepairTouches(repair)
	}
	return nil
}

// EstimateDiskUsage forwards to the base engine (storage.SizeEstimator).
func (e *Engine) EstimateDiskUsage(lower, upper []byte) (uint64, error) {
	est, ok := e.Engine.(storage.SizeEstimator)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	return est.EstimateDiskUsage(lower, upper)
}

// Checkpoint forwards to the base engine (storage.Checkpointer).
func (e *Engine) Checkpoint(dir string) error {
	cp, ok := e.Engine.(storage.Checkpointer)
	if !ok {
		return errors.ErrUnsupported
	}
	return cp.Checkpoint(dir)
}

// next is the next stamp at now: now's second, never behind the last
// one; e.mu is held.
func (e *Engine) next(now time.Time) Timestamp {
	secs := uint32(now.Unix())
	if secs > e.last.T {
		e.last = Timestamp{T: secs, I: 1}
	} else {
		e.last.I++
	}
	return e.last
}

// commit stamps b's events, adds them to b and commits it. A sync waits
// after the mutex is released, so concurrent durable writers share it.
func (e *Engine) commit(b *batch, sync bool) error {
	if !sync {
		_, err := e.stampAndCommit(b, func() (func() error, error) { return nil, b.Batch.Commit(false) })
		return err
	}
	wait, err := e.commitNoWait(b)
	if err != nil {
		return err
	}
	return wait()
}

// commitNoWait is commit in two steps (storage.GroupCommit): the base
// batch's own when it has them, so that a durable write that fails is
// never read (pebblestore's durable view), else a commit and a sync.
func (e *Engine) commitNoWait(b *batch) (func() error, error) {
	gc, ok := b.Batch.(storage.GroupCommit)
	if !ok {
		return e.stampAndCommit(b, func() (func() error, error) { return e.Engine.Sync, b.Batch.Commit(false) })
	}
	return e.stampAndCommit(b, gc.CommitNoWait)
}

// stampAndCommit stamps b's events, writes their records and runs commit,
// then publishes the stamp (Latest) once every earlier one has settled
// too, and wakes the readers. Only taking the stamp holds e.mu: the
// records and the commit, which copy and apply the documents, run
// beside other writers'.
func (e *Engine) stampAndCommit(b *batch, commit func() (func() error, error)) (func() error, error) {
	e.mu.Lock()
	now := e.clock.Now()
	ts, wall := e.next(now), now.UnixMilli()
	seq := e.addPending(ts)
	e.mu.Unlock()
	rw, _ := e.writers.Get().(*recordWriter)
	if rw == nil {
		rw = new(recordWriter)
	}
	err := rw.write(b.Batch, ts, wall, b.events)
	rw.trim()
	e.writers.Put(rw)
	var wait func() error
	if err == nil {
		wait, err = commit()
	}
	// A stamp settles whether its commit worked or not: when not, nothing
	// of it is in the log, and the writers after it must not wait on it.
	if e.settle(seq) {
		e.signal.Notify()
	}
	if err != nil {
		return nil, err
	}
	return wait, nil
}

// pendingStamp is a stamp handed out, and whether its commit returned.
type pendingStamp struct {
	ts      Timestamp
	settled bool
}

// addPending adds ts, the newest stamp, to the pending ones and returns
// its sequence number; e.mu is held.
func (e *Engine) addPending(ts Timestamp) uint64 {
	e.pending = append(e.pending, pendingStamp{ts: ts})
	return e.settledSeq + uint64(len(e.pending))
}

// settle marks the stamp seq settled and moves Latest over the settled
// prefix of the pending stamps. It reports whether Latest moved.
func (e *Engine) settle(seq uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[seq-e.settledSeq-1].settled = true
	n := 0
	for n < len(e.pending) && e.pending[n].settled {
		n++
	}
	if n == 0 {
		return false
	}
	e.latest.Store(pack(e.pending[n-1].ts))
	e.settledSeq += uint64(n)
	// The queue holds about one stamp per concurrent writer: shifting
	// it keeps its array, so settling allocates nothing.
	e.pending = append(e.pending[:0], e.pending[n:]...)
	return true
}

// WriteEvents adds the records of events, stamped ts, to b: what a
// standalone commit and a replica set member's apply both do. A run of
// TTL deletions of one collection by one index goes in as compact records
// (expirylog.go); every other event as a record of its own.
func WriteEvents(b storage.Batch, ts Timestamp, wallMillis int64, events [][]byte) error {
	var w recordWriter
	return w.write(b, ts, wallMillis, events)
}

// recordWriter holds WriteEvents' buffers. The Engine keeps them across
// commits (Engine.writers), since a batch copies what it is given: a
// write's records then cost no allocations of their own.
type recordWriter struct {
	key, val []byte
	compact  compactWriter
}

// maxKeptBuffer bounds the buffers the Engine keeps between commits: one
// large document's record does not pin its size for good.
const maxKeptBuffer = 64 << 10

func (rw *recordWriter) write(b storage.Batch, ts Timestamp, wallMillis int64, events [][]byte) error {
	w := &rw.compact
	var cur, next expiryView
	for i := 0; i < len(events); {
		rw.key = AppendKey(rw.key[:0], Position{TS: ts, Index: uint32(i)})
		n := 1
		if viewExpiry(events[i], &cur) {
			w.start(wallMillis, &cur)
			w.add(&cur)
			for n < maxCompact && i+n < len(events) && viewExpiry(events[i+n], &next) && next.sameGroup(&cur) {
				w.add(&next)
				n++
			}
		}
		var err error
		if n > 1 {
			err = b.Set(rw.key, w.finish())
		} else {
			rw.val = AppendRecord(rw.val[:0], wallMillis, events[i])
			err = b.Set(rw.key, rw.val)
		}
		if err != nil {
			return fmt.Errorf("changestream: write event: %w", err)
		}
		i += n
	}
	return nil
}

// trim drops buffers grown past maxKeptBuffer.
func (rw *recordWriter) trim() {
	if cap(rw.val) > maxKeptBuffer {
		rw.val = nil
	}
	if cap(rw.compact.val) > maxKeptBuffer {
		rw.compact.val = nil
	}
	if cap(rw.compact.prevID) > maxKeptBuffer {
		rw.compact.prevID = nil
	}
}

var (
	_ EventBatch             = (*batch)(nil)
	_ storage.Encodable      = (*batch)(nil)
	_ storage.GroupCommit    = (*batch)(nil)
	_ storage.SoleEntryNoter = (*batch)(nil)
	_ storage.ExpiredDeleter = (*batch)(nil)
	_ storage.TouchSetter    = (*batch)(nil)
	_ storage.TouchRepairer  = (*Engine)(nil)
)

// batch is a storage batch of the standalone Engine.
type batch struct {
	storage.Batch
	eng     *Engine
	events  [][]byte
	records bool // the log was on when the batch was made
	done    bool // counted out of eng.unlogged
}

// AddEvent implements EventBatch.
func (b *batch) AddEvent(ev []byte) {
	if b.records {
		b.events = append(b.events, ev)
	}
}

// RecordsEvents implements EventBatch.
func (b *batch) RecordsEvents() bool { return b.records }

// finish counts a batch made while the log was off out once it committed
// or closed.
func (b *batch) finish() {
	if !b.records && !b.done {
		b.done = true
		b.eng.unlogged.Add(-1)
	}
}

// Close implements storage.Batch.
func (b *batch) Close() error {
	b.finish()
	return b.Batch.Close()
}

// Commit implements storage.Batch.
func (b *batch) Commit(sync bool) error {
	defer b.finish()
	if len(b.events) == 0 {
		return b.Batch.Commit(sync)
	}
	return b.eng.commit(b, sync)
}

// CommitNoWait implements storage.GroupCommit.
func (b *batch) CommitNoWait() (func() error, error) {
	defer b.finish()
	if len(b.events) == 0 {
		return storage.CommitNoWait(b.Batch, b.eng.Engine)
	}
	return b.eng.commitNoWait(b)
}

// NoteSoleEntry forwards to the base batch when it takes the note.
func (b *batch) NoteSoleEntry(lower, key, value []byte) {
	if n, ok := b.Batch.(storage.SoleEntryNoter); ok {
		n.NoteSoleEntry(lower, key, value)
	}
}

// DeleteExpired forwards to the base batch, or deletes key as any other.
func (b *batch) DeleteExpired(key []byte, expiredAt int64) error {
	if d, ok := b.Batch.(storage.ExpiredDeleter); ok {
		return d.DeleteExpired(key, expiredAt)
	}
	return b.Batch.Delete(key)
}

// TouchesBehind forwards to the base batch: false when it has none.
func (b *batch) TouchesBehind() bool {
	ts, ok := b.Batch.(storage.TouchSetter)
	return ok && ts.TouchesBehind()
}

// SetTouch forwards to the base batch, or sets key as any other.
func (b *batch) SetTouch(key, value []byte) error {
	if ts, ok := b.Batch.(storage.TouchSetter); ok {
		return ts.SetTouch(key, value)
	}
	return b.Batch.Set(key, value)
}

// Repr forwards the base batch's encoding when it has one.
func (b *batch) Repr() ([]byte, error) {
	r, ok := b.Batch.(storage.Encodable)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return r.Repr()
}

func pack(ts Timestamp) uint64 { return uint64(ts.T)<<32 | uint64(ts.I) }

func unpack(v uint64) Timestamp { return Timestamp{T: uint32(v >> 32), I: uint32(v)} }

// Signal wakes waiting readers when changes commit. Notify closes the
// current channel and makes a new one; readers take the channel before
// they look at the log, so a commit after the look still wakes them.
// A channel nobody took since the last Notify stays: closing it would
// wake no one, and every write with events notifies, streams or not.
type Signal struct {
	mu    sync.Mutex
	ch    chan struct{}
	taken bool // Wait handed out ch
}

// NewSignal returns a Signal.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Wait returns a channel closed at the next Notify.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken = true
	return s.ch
}

// Notify wakes every waiter. A nil Signal does nothing.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.taken {
		close(s.ch)
		s.ch, s.taken = make(chan struct{}), false
	}
	s.mu.Unlock()
}
