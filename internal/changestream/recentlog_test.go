package changestream

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// newTestLog is a standalone engine with its log on.
func newTestLog(t *testing.T) *Engine {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	eng, err := NewEngine(base, clock.NewManual(time.Unix(1000, 0)), NewSignal())
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Record(); err != nil {
		t.Fatal(err)
	}
	return eng
}

// commitEvents commits one batch of n insert events named name.0 ... .
func commitEvents(t *testing.T, eng *Engine, name string, n int) {
	b := eng.NewBatch()
	defer b.Close()
	for i := range n {
		b.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: fmt.Sprintf("%s.%d", name, i)}).Encode(nil))
	}
	if err := b.Commit(false); err != nil {
		t.Error(err)
	}
}

// readRecent reads through recent as a stream does, a batch at a time up to
// Latest, until it has want records or a second passes without one.
func readRecent(recent *RecentLog, eng *Engine, from Position, want int, pause time.Duration) ([]Record, error) {
	var got []Record
	pos := from
	idle := time.Now()
	for len(got) < want && time.Since(idle) < 5*time.Second {
		hwm := HighWater(eng.Latest())
		n := 0
		err := recent.Read(pos, hwm, func(rec Record) (bool, error) {
			got = append(got, rec)
			pos = rec.Pos
			n++
			return n < 50, nil // a stream's batch ends early too
		})
		if err != nil {
			return got, err
		}
		if n < 50 && hwm.After(pos) {
			pos = hwm
		}
		if n > 0 {
			idle = time.Now()
		}
		time.Sleep(pause)
	}
	return got, nil
}

// join counts n streams into recent.
func join(recent *RecentLog, n int) {
	for range n {
		recent.Join()
	}
}

// logRecords is the whole log, read by Scan.
func logRecords(t *testing.T, eng *Engine) []Record {
	t.Helper()
	var all []Record
	if err := Scan(eng, Position{}, func(rec Record) (bool, error) { all = append(all, rec); return true, nil }); err != nil {
		t.Fatal(err)
	}
	return all
}

func sameRecords(got, want []Record) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Pos != want[i].Pos || got[i].Event.Coll != want[i].Event.Coll {
			return fmt.Errorf("record %d is %v %s, want %v %s", i, got[i].Pos, got[i].Event.Coll, want[i].Pos, want[i].Event.Coll)
		}
	}
	return nil
}

// TestRecentLogEveryRecordOnceInOrder: streams reading through one small ring
// while writers commit, one of them slow enough to fall behind it, each
// get every record after their start once, in order.
func TestRecentLogEveryRecordOnceInOrder(t *testing.T) {
	eng := newTestLog(t)
	recent := newRecentLog(eng, 64, recentBytes)
	join(recent, 4)
	start := HighWater(eng.Latest())
	const writers, batches, perBatch = 4, 150, 3
	total := writers * batches * perBatch
	pauses := []time.Duration{0, 0, 100 * time.Microsecond, 5 * time.Millisecond}
	got := make([][]Record, len(pauses))
	errs := make([]error, len(pauses))
	var wg sync.WaitGroup
	for i, pause := range pauses {
		wg.Go(func() { got[i], errs[i] = readRecent(recent, eng, start, total, pause) })
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Go(func() {
			for b := range batches {
				commitEvents(t, eng, fmt.Sprintf("w%d.b%d", w, b), perBatch)
			}
		})
	}
	ww.Wait()
	wg.Wait()
	all := logRecords(t, eng)
	if len(all) != total {
		t.Fatalf("the log holds %d records, want %d", len(all), total)
	}
	for i := range pauses {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if err := sameRecords(got[i], all); err != nil {
			t.Fatalf("reader %d (pause %v): %v", i, pauses[i], err)
		}
	}
}

// TestRecentLogSharesDecodedRecords: two streams at the same place get the
// same decoded event (read from the log once); a stream behind the ring
// reads the log itself and still gets every record after its position.
func TestRecentLogSharesDecodedRecords(t *testing.T) {
	eng := newTestLog(t)
	recent := newRecentLog(eng, 8, recentBytes)
	join(recent, 3)
	start := HighWater(eng.Latest())
	for i := range 20 {
		commitEvents(t, eng, fmt.Sprint(i), 1)
	}
	a, err := readRecent(recent, eng, start, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := logRecords(t, eng)
	if err := sameRecords(a, all); err != nil {
		t.Fatal(err)
	}
	// The ring holds the last 8: a second stream from the 15th shares them.
	b, err := readRecent(recent, eng, all[14].Pos, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecords(b, all[15:]); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if b[i].Event != a[15+i].Event {
			t.Fatalf("record %d was decoded again for the second stream", 15+i)
		}
	}
	// One from the 3rd is behind the ring: its own scan, every record.
	c, err := readRecent(recent, eng, all[2].Pos, 17, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecords(c, all[3:]); err != nil {
		t.Fatal(err)
	}
	if c[0].Event == a[3].Event {
		t.Fatal("a record before the ring came from the ring")
	}
}

// TestRecentLogBoundsItsBytes: large documents are held within the ring's
// byte budget, one larger than the whole budget too, and streams still
// get every record in order.
func TestRecentLogBoundsItsBytes(t *testing.T) {
	eng := newTestLog(t)
	const budget = 10 << 10
	recent := newRecentLog(eng, 64, budget)
	join(recent, 2)
	start := HighWater(eng.Latest())
	doc := func(size int) []byte {
		d := make([]byte, size)
		d[0], d[1] = byte(size), byte(size>>8)
		return d
	}
	sizes := []int{3000, 3000, 3000, 3000, 3000, 3000, 20000, 3000, 100, 100}
	for i, size := range sizes {
		b := eng.NewBatch()
		b.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: fmt.Sprint(i), Doc: doc(size)}).Encode(nil))
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	for r := range 2 { // the second is behind the ring: its own scan
		got, err := readRecent(recent, eng, start, len(sizes), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRecords(got, logRecords(t, eng)); err != nil {
			t.Fatalf("reader %d: %v", r, err)
		}
		for i, rec := range got {
			if len(rec.Event.Doc) != sizes[i] {
				t.Fatalf("record %d has %d bytes, want %d", i, len(rec.Event.Doc), sizes[i])
			}
		}
		if recent.bytes > budget || recent.n != 3 {
			t.Fatalf("the ring holds %d records of %d bytes, budget %d", recent.n, recent.bytes, budget)
		}
	}
}

// BenchmarkOneReaderStorm: one stream reading 10 000 new small records
// per batch (a storm's expiries), by its own scan against through the
// recent: alone (the recent leaves it to its own scan) and with another
// stream open (the ring kept, which it alone fills).
func BenchmarkOneReaderStorm(b *testing.B) {
	const batches, perBatch = 10, 1000
	for _, mode := range []string{"scan", "recent", "recentShared"} {
		b.Run(mode, func(b *testing.B) {
			base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer base.Close()
			eng, err := NewEngine(base, clock.NewManual(time.Unix(1000, 0)), NewSignal())
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.Record(); err != nil {
				b.Fatal(err)
			}
			recent := NewRecentLog(eng)
			recent.Join()
			if mode == "recentShared" {
				recent.Join() // another stream, idle
			}
			pos := HighWater(eng.Latest())
			ev := (&Event{Op: OpDelete, DB: "db", Coll: "c", ID: []byte{0x1c, 1, 2, 3}, Expired: &Expiry{Index: "at_1", AfterSecs: 1}}).Encode(nil)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for range batches {
					bt := eng.NewBatch()
					for range perBatch {
						bt.(EventBatch).AddEvent(ev)
					}
					if err := bt.Commit(false); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				hwm := HighWater(eng.Latest())
				n := 0
				read := func(rec Record) (bool, error) { n++; pos = rec.Pos; return true, nil }
				if mode == "scan" {
					err = Scan(eng, pos, read)
				} else {
					err = recent.Read(pos, hwm, read)
				}
				if err != nil || n != batches*perBatch {
					b.Fatalf("%d records, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N*batches*perBatch), "ns/record")
		})
	}
}

// TestRecentLogLeavesALoneStreamToItsScan: with one stream open the ring is
// not kept; with a second it is.
func TestRecentLogLeavesALoneStreamToItsScan(t *testing.T) {
	eng := newTestLog(t)
	recent := newRecentLog(eng, 64, recentBytes)
	start := HighWater(eng.Latest())
	for i := range 5 {
		commitEvents(t, eng, fmt.Sprint(i), 1)
	}
	recent.Join()
	if got, err := readRecent(recent, eng, start, 5, 0); err != nil || len(got) != 5 || recent.n != 0 {
		t.Fatalf("a lone stream read %d records (%v) and the ring holds %d", len(got), err, recent.n)
	}
	recent.Join()
	if got, err := readRecent(recent, eng, start, 5, 0); err != nil || len(got) != 5 || recent.n != 5 {
		t.Fatalf("one of two streams read %d records (%v) and the ring holds %d", len(got), err, recent.n)
	}
	recent.Leave()
	commitEvents(t, eng, "after", 1)
	if got, err := readRecent(recent, eng, start, 6, 0); err != nil || len(got) != 6 || recent.n != 5 {
		t.Fatalf("alone again, a stream read %d records (%v) and the ring holds %d", len(got), err, recent.n)
	}
}
