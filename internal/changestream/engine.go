package changestream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
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

// RecordingTag is the first byte of the key that marks a standalone
// store whose change log is on (docs/design/0001 lists the tags).
const RecordingTag = 'E'

var recordingKey = []byte{RecordingTag}

// recordWait bounds how long Record waits for writes begun before it.
const recordWait = 10 * time.Second

// Engine is the storage engine of a standalone server: its batches stamp
// their events with the next cluster timestamp at commit and write them
// into the change log atomically with the documents.
//
// Stamp and commit happen under one mutex, so the log becomes visible in
// timestamp order: a reader that sees a record sees every earlier one.
// Batches without events (index builds, session records) commit without
// it.
type Engine struct {
	storage.Engine
	clock  clock.Clock
	signal *Signal

	mu   sync.Mutex // orders stamp + commit of batches with events
	last Timestamp  // the last stamp handed out; mu
	// latest is the last stamp committed, packed T<<32|I.
	latest atomic.Uint64
	// recording: batches made from now on keep their events; unlogged
	// counts open batches made before, which Record waits out.
	recording atomic.Bool
	unlogged  atomic.Int64
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
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := e.next()
	b := e.Engine.NewBatch()
	defer b.Close()
	if err := b.Set(recordingKey, []byte{1}); err != nil {
		return err
	}
	if err := b.Set(trimKey, Key(HighWater(ts))); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return err
	}
	e.latest.Store(pack(ts))
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

// next is the next stamp: the clock's second, never behind the last one;
// e.mu is held.
func (e *Engine) next() Timestamp {
	secs := uint32(e.clock.Now().Unix())
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

// stampAndCommit stamps b's events and runs commit under e.mu, so that the
// log becomes visible in timestamp order, and wakes the readers.
func (e *Engine) stampAndCommit(b *batch, commit func() (func() error, error)) (func() error, error) {
	e.mu.Lock()
	ts := e.next()
	wall := e.clock.Now().UnixMilli()
	if err := WriteEvents(b.Batch, ts, wall, b.events); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	wait, err := commit()
	if err == nil {
		e.latest.Store(pack(ts))
	}
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	e.signal.Notify()
	return wait, nil
}

// WriteEvents adds the records of events, stamped ts, to b: what a
// standalone commit and a replica set member's apply both do. A run of
// TTL deletions of one collection by one index goes in as compact records
// (expirylog.go); every other event as a record of its own.
func WriteEvents(b storage.Batch, ts Timestamp, wallMillis int64, events [][]byte) error {
	var key, val []byte
	var w compactWriter
	var cur, next expiryView
	for i := 0; i < len(events); {
		key = AppendKey(key[:0], Position{TS: ts, Index: uint32(i)})
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
			err = b.Set(key, w.finish())
		} else {
			val = AppendRecord(val[:0], wallMillis, events[i])
			err = b.Set(key, val)
		}
		if err != nil {
			return fmt.Errorf("changestream: write event: %w", err)
		}
		i += n
	}
	return nil
}

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

// Repr forwards the base batch's encoding when it has one.
func (b *batch) Repr() ([]byte, error) {
	r, ok := b.Batch.(interface{ Repr() ([]byte, error) })
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
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewSignal returns a Signal.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Wait returns a channel closed at the next Notify.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// Notify wakes every waiter. A nil Signal does nothing.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}
