package changestream

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// gatedEngine is a storage engine whose batches run a hook before their
// commit: a test holds a commit back to make batches commit out of stamp
// order, or makes one fail.
type gatedEngine struct {
	storage.Engine
	before func(tag []byte) error
}

func (g *gatedEngine) NewBatch() storage.Batch {
	return &gatedBatch{Batch: g.Engine.NewBatch(), eng: g}
}

type gatedBatch struct {
	storage.Batch
	eng *gatedEngine
	tag []byte // the first key the batch set
}

func (b *gatedBatch) Set(k, v []byte) error {
	if b.tag == nil {
		b.tag = append([]byte(nil), k...)
	}
	return b.Batch.Set(k, v)
}

func (b *gatedBatch) Commit(sync bool) error {
	if b.eng.before != nil {
		if err := b.eng.before(b.tag); err != nil {
			return err
		}
	}
	return b.Batch.Commit(sync)
}

func newGatedEngine(t *testing.T) (*Engine, *gatedEngine, *clock.Manual) {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	gated := &gatedEngine{Engine: base}
	clk := clock.NewManual(time.Unix(1000, 0))
	eng, err := NewEngine(gated, clk, NewSignal())
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Record(); err != nil {
		t.Fatal(err)
	}
	return eng, gated, clk
}

// commitEvent commits a batch that writes the document key doc with one
// insert event of collection doc.
func commitEvent(eng *Engine, doc string) error {
	b := eng.NewBatch()
	defer b.Close()
	if err := b.Set([]byte("d"+doc), []byte("doc")); err != nil {
		return err
	}
	b.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: doc}).Encode(nil))
	return b.Commit(false)
}

// readUpToNow reads the log after after up to the feed's high-water mark,
// as a stream's getMore does.
func readUpToNow(t *testing.T, eng *Engine, after Position) []Record {
	t.Helper()
	return readThrough(t, eng, after, func(after, hwm Position, fn func(Record) (bool, error)) error {
		return ScanTo(eng, after, hwm, fn)
	})
}

// readThrough is readUpToNow with the reading function read (ScanTo, or a
// RecentLog's Read).
func readThrough(t *testing.T, eng *Engine, after Position, read func(after, hwm Position, fn func(Record) (bool, error)) error) []Record {
	t.Helper()
	feed := &Feed{Reader: eng, Latest: eng.Latest}
	hwm, err := feed.Now()
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := read(after, hwm, func(rec Record) (bool, error) {
		recs = append(recs, rec)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestEngineOutOfOrderCommit: a batch stamped later that commits first
// stays out of readers' sight until the earlier one commits, and Latest
// does not pass the earlier stamp meanwhile.
func TestEngineOutOfOrderCommit(t *testing.T) {
	eng, gated, _ := newGatedEngine(t)
	start := eng.Latest()
	held, release := make(chan struct{}), make(chan struct{})
	gated.before = func(tag []byte) error {
		if string(tag) == "da" {
			close(held)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- commitEvent(eng, "a") }()
	<-held // a has its stamp and is in its commit
	if err := commitEvent(eng, "b"); err != nil {
		t.Fatal(err)
	}
	if got := eng.Latest(); got != start {
		t.Fatalf("Latest %v passed a's stamp while a was uncommitted (start %v)", got, start)
	}
	if recs := readUpToNow(t, eng, HighWater(start)); len(recs) != 0 {
		t.Fatalf("a reader saw %d records (first %s) before a committed; want none", len(recs), recs[0].Event.Coll)
	}
	if all := 0; Scan(eng, HighWater(start), func(Record) (bool, error) { all++; return true, nil }) != nil || all != 1 {
		t.Fatalf("b's record is not in storage: the test did not commit out of order")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs := readUpToNow(t, eng, HighWater(start))
	if len(recs) != 2 || recs[0].Event.Coll != "a" || recs[1].Event.Coll != "b" {
		t.Fatalf("after both committed a reader saw %d records, want a then b", len(recs))
	}
	if eng.Latest() != recs[1].Pos.TS {
		t.Fatalf("Latest %v, want b's stamp %v", eng.Latest(), recs[1].Pos.TS)
	}
}

// TestEngineFailedCommitSettles: a commit that fails leaves no record and
// does not hold Latest back for the writes after it.
func TestEngineFailedCommitSettles(t *testing.T) {
	eng, gated, _ := newGatedEngine(t)
	start := eng.Latest()
	boom := errors.New("boom")
	gated.before = func(tag []byte) error {
		if string(tag) == "dbad" {
			return boom
		}
		return nil
	}
	if err := commitEvent(eng, "bad"); !errors.Is(err, boom) {
		t.Fatalf("commit: %v, want boom", err)
	}
	if err := commitEvent(eng, "good"); err != nil {
		t.Fatal(err)
	}
	recs := readUpToNow(t, eng, HighWater(start))
	if len(recs) != 1 || recs[0].Event.Coll != "good" || eng.Latest() != recs[0].Pos.TS {
		t.Fatalf("read %d records, Latest %v: want good's alone, Latest at it", len(recs), eng.Latest())
	}
}

// TestEngineConcurrentWritersNoGaps: writers commit concurrently, with
// random delays in their commits so that they finish out of stamp order,
// while a reader follows the log as a stream does (up to Feed.Now, on
// from its last position). The reader sees every record exactly once, in
// stamp order; through ScanTo, and through a RecentLog's ring that two streams
// share.
func TestEngineConcurrentWritersNoGaps(t *testing.T) {
	t.Run("scan", func(t *testing.T) {
		testConcurrentWriters(t, func(eng *Engine) func(after, hwm Position, fn func(Record) (bool, error)) error {
			return func(after, hwm Position, fn func(Record) (bool, error)) error {
				return ScanTo(eng, after, hwm, fn)
			}
		})
	})
	t.Run("recentLog", func(t *testing.T) {
		testConcurrentWriters(t, func(eng *Engine) func(after, hwm Position, fn func(Record) (bool, error)) error {
			recent := newRecentLog(eng, 64, 1<<20)
			recent.Join()
			recent.Join()
			return recent.Read
		})
	})
}

func testConcurrentWriters(t *testing.T, reader func(*Engine) func(after, hwm Position, fn func(Record) (bool, error)) error) {
	eng, gated, clk := newGatedEngine(t)
	read := reader(eng)
	start := eng.Latest()
	gated.before = func([]byte) error {
		if d := rand.IntN(4); d > 0 {
			time.Sleep(time.Duration(d) * 50 * time.Microsecond)
		}
		return nil
	}
	const writers, each = 8, 150
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := commitEvent(eng, "c"); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					clk.Advance(time.Second) // stamps cross seconds too
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	pos, seen := HighWater(start), 0
	var prev Position
	follow := func() {
		for _, rec := range readThrough(t, eng, pos, read) {
			if !rec.Pos.After(prev) {
				t.Fatalf("record %v after %v: out of order", rec.Pos, prev)
			}
			prev, pos = rec.Pos, rec.Pos
			seen++
		}
	}
	for running := true; running; {
		select {
		case <-finished:
			running = false
		default:
		}
		follow()
	}
	follow()
	all := 0
	if err := Scan(eng, HighWater(start), func(Record) (bool, error) { all++; return true, nil }); err != nil {
		t.Fatal(err)
	}
	if all != writers*each || seen != all {
		t.Fatalf("the reader saw %d records of %d in the log (%d written): it passed over some", seen, all, writers*each)
	}
}

// TestEngineRecordRace: two streams opening at once turn the log on once;
// the second does not write a later trim point, which would report
// history lost for the changes logged in between.
func TestEngineRecordRace(t *testing.T) {
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	held, release := make(chan struct{}), make(chan struct{})
	gated := &gatedEngine{Engine: base, before: func(tag []byte) error {
		if len(tag) == 1 && tag[0] == byte(keyspace.Recording) {
			select {
			case <-held:
			default:
				close(held)
				<-release
			}
		}
		return nil
	}}
	clk := clock.NewManual(time.Unix(1000, 0))
	eng, err := NewEngine(gated, clk, NewSignal())
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- eng.Record() }()
	<-held // the first is writing its mark
	second := make(chan error, 1)
	go func() { second <- eng.Record() }()
	time.Sleep(20 * time.Millisecond) // the second waits for the first
	clk.Advance(time.Second)          // a second mark would be later
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if mark, err := TrimmedTo(base); err != nil || mark != HighWater(Timestamp{T: 1000, I: 1}) {
		t.Fatalf("trim point %v (%v), want the first Record's, after 1000.1", mark, err)
	}
}

// TestSignal: a Notify wakes every reader that took the channel before it
// and no later one; a Notify nobody waits for changes nothing, and the
// next reader still wakes at the next Notify.
func TestSignal(t *testing.T) {
	s := NewSignal()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	s.Notify() // nobody waits
	a, b := s.Wait(), s.Wait()
	if closed(a) || closed(b) {
		t.Fatal("a Notify before Wait woke the reader")
	}
	s.Notify()
	if !closed(a) || !closed(b) {
		t.Fatal("Notify did not wake the readers that took the channel")
	}
	c := s.Wait()
	if closed(c) {
		t.Fatal("a reader after Notify got a closed channel")
	}
	s.Notify()
	s.Notify()
	if !closed(c) {
		t.Fatal("Notify did not wake the reader")
	}
	var nilSignal *Signal
	nilSignal.Notify()
}

// TestScanToAheadOfMark: a reader whose position is past the high-water
// mark (a stream started at a future operation time) reads nothing, and
// no error, until the mark passes it.
func TestScanToAheadOfMark(t *testing.T) {
	eng, _, _ := newGatedEngine(t)
	if err := commitEvent(eng, "a"); err != nil {
		t.Fatal(err)
	}
	hwm := HighWater(eng.Latest())
	future := Position{TS: Timestamp{T: hwm.TS.T + 100}}
	n := 0
	if err := ScanTo(eng, future, hwm, func(Record) (bool, error) { n++; return true, nil }); err != nil || n != 0 {
		t.Fatalf("ScanTo from after the mark: %d records, %v; want none, no error", n, err)
	}
	if err := ScanTo(eng, Position{}, hwm, func(Record) (bool, error) { n++; return true, nil }); err != nil || n != 1 {
		t.Fatalf("ScanTo from the start: %d records, %v; want a's", n, err)
	}
}
