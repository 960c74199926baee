package changestream

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

var testUUID = bytes.Repeat([]byte{7}, 16)

// ttlDelete is the event of a TTL deletion of the document with key-encoded
// _id id.
func ttlDelete(coll, index string, id []byte, at int64) *Event {
	return &Event{Op: OpDelete, DB: "db", Coll: coll, ID: id, UUID: testUUID,
		Expired: &Expiry{Index: index, AfterSecs: 0, AtMillis: at}}
}

// objectID is a key-encoded ObjectId-like _id: neighbours share a prefix.
func objectID(i int) []byte {
	return fmt.Appendf([]byte{0x3c, 0x65, 0x64, 0x32, 0x00, 0x11}, "%08d", i)
}

// mixedWrite is one write's events: compactable runs broken by the
// events that must stay as they are.
func mixedWrite() []*Event {
	evs := []*Event{{Op: OpInsert, DB: "db", Coll: "a", Doc: []byte("\x05\x00\x00\x00\x00")}}
	for i := 0; i < 5; i++ {
		evs = append(evs, ttlDelete("a", "t", objectID(i), 1000+int64(i)))
	}
	for i := 5; i < 8; i++ { // another index: another record
		evs = append(evs, ttlDelete("a", "u", objectID(i), 900-int64(i)))
	}
	evs = append(evs, ttlDelete("b", "t", objectID(9), 5)) // alone: a record of its own
	pre := ttlDelete("a", "t", objectID(10), 6)
	pre.Pre = []byte("\x05\x00\x00\x00\x00") // with its pre-image: a record of its own
	evs = append(evs, pre)
	for i := 11; i < 14; i++ { // BSON _ids, no UUID
		ev := ttlDelete("a", "t", nil, 7)
		ev.RawID, ev.UUID = []byte{0x10, byte(i), 0, 0, 0}, nil
		evs = append(evs, ev)
	}
	evs = append(evs, ttlDelete("a", "t", []byte{}, 8), ttlDelete("a", "t", []byte{}, 8)) // empty _ids
	return evs
}

func encodeAll(evs []*Event) [][]byte {
	out := make([][]byte, len(evs))
	for i, ev := range evs {
		out[i] = ev.Encode(nil)
	}
	return out
}

func openMem(t testing.TB) *pebblestore.Store {
	s, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func writeEvents(t testing.TB, eng storage.Engine, ts Timestamp, events [][]byte) {
	b := eng.NewBatch()
	defer b.Close()
	if err := WriteEvents(b, ts, 12345, events); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
}

// logKeys lists the change log's records as stored.
func logKeys(t testing.TB, r storage.Reader) (keys, values [][]byte) {
	it, err := r.NewIter(LogStart, LogEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
		values = append(values, bytes.Clone(it.Value()))
	}
	return keys, values
}

func scanAll(t testing.TB, r storage.Reader, after Position) []Record {
	var out []Record
	if err := Scan(r, after, func(rec Record) (bool, error) { out = append(out, rec); return true, nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// want is what a log of per-event records gives back for evs at ts.
func want(evs []*Event, ts Timestamp) []Record {
	out := make([]Record, len(evs))
	for i, ev := range evs {
		back, err := Decode(ev.Encode(nil))
		if err != nil {
			panic(err)
		}
		out[i] = Record{Pos: Position{TS: ts, Index: uint32(i)}, WallMillis: 12345, Event: back}
	}
	return out
}

func sameExpiryRecords(t *testing.T, what string, got, exp []Record) {
	t.Helper()
	if len(got) != len(exp) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(exp))
	}
	for i := range got {
		g, w := got[i], exp[i]
		if g.Pos != w.Pos || g.WallMillis != w.WallMillis || !reflect.DeepEqual(normalized(*g.Event), normalized(*w.Event)) {
			t.Fatalf("%s: record %d is %+v %+v, want %+v %+v", what, i, g, *g.Event, w, *w.Event)
		}
	}
}

// TestCompactExpiriesReadAsTheirEvents: a write's runs of TTL deletions go
// into compact records, and Scan gives back exactly the events a record
// per event would, each at its own position; every other event keeps a
// record of its own, in the old format.
func TestCompactExpiriesReadAsTheirEvents(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 3}
	evs := mixedWrite()
	writeEvents(t, s, ts, encodeAll(evs))
	keys, values := logKeys(t, s)
	// insert, 5 (t), 3 (u), b alone, the pre-image, 3 BSON _ids, 2 empty.
	wantAt := []uint32{0, 1, 6, 9, 10, 11, 14}
	if len(keys) != len(wantAt) {
		t.Fatalf("%d records stored, want %d", len(keys), len(wantAt))
	}
	for i, k := range keys {
		p, _ := keyPosition(k)
		if p != (Position{TS: ts, Index: wantAt[i]}) {
			t.Fatalf("record %d at %+v, want index %d", i, p, wantAt[i])
		}
	}
	if isCompact(values[3]) || isCompact(values[4]) || !bytes.Equal(values[3][wallLen:], evs[9].Encode(nil)) {
		t.Fatal("a lone expiry or one with a pre-image did not keep its own record")
	}
	sameExpiryRecords(t, "scan", scanAll(t, s, Position{}), want(evs, ts))
}

// TestResumeAtEveryPosition: a scan after any position, inside a compact
// record (first, middle, last) or outside, starts at the very next event;
// Has finds every event and no other.
func TestResumeAtEveryPosition(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 3}
	evs := mixedWrite()
	writeEvents(t, s, ts, encodeAll(evs))
	later := []*Event{{Op: OpInsert, DB: "db", Coll: "z"}}
	writeEvents(t, s, Timestamp{T: 100, I: 4}, encodeAll(later))
	all := append(want(evs, ts), want(later, Timestamp{T: 100, I: 4})...)
	for i, rec := range all {
		sameExpiryRecords(t, fmt.Sprintf("after %+v", rec.Pos), scanAll(t, s, rec.Pos), all[i+1:])
		if ok, err := Has(s, rec.Pos); err != nil || !ok {
			t.Fatalf("Has(%+v) = %v %v", rec.Pos, ok, err)
		}
	}
	sameExpiryRecords(t, "after the high-water mark before", scanAll(t, s, HighWater(Timestamp{T: 100, I: 2})), all)
	sameExpiryRecords(t, "after the write's high-water mark", scanAll(t, s, HighWater(ts)), all[len(evs):])
	for _, p := range []Position{{TS: ts, Index: uint32(len(evs))}, {TS: Timestamp{T: 100, I: 2}}, {TS: Timestamp{T: 100, I: 4}, Index: 1}, {}} {
		if ok, err := Has(s, p); err != nil || ok {
			t.Fatalf("Has(%+v) = %v %v for a change the log does not hold", p, ok, err)
		}
	}
}

// TestScanStoppedInsideARecordResumes: a reader that stops after any
// number of events (a batch size, a scan limit) and resumes from the last
// position it saw gets every event once.
func TestScanStoppedInsideARecordResumes(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 3}
	evs := mixedWrite()
	writeEvents(t, s, ts, encodeAll(evs))
	for limit := 1; limit <= 4; limit++ {
		var got []Record
		after := Position{}
		for {
			n := 0
			err := Scan(s, after, func(rec Record) (bool, error) {
				got, after, n = append(got, rec), rec.Pos, n+1
				return n < limit, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		sameExpiryRecords(t, fmt.Sprintf("limit %d", limit), got, want(evs, ts))
	}
}

// TestLongRunsSplitAtTheRecordCap: a run longer than maxCompact takes
// several records whose positions follow on.
func TestLongRunsSplitAtTheRecordCap(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 1}
	var evs []*Event
	for i := 0; i < 2*maxCompact+5; i++ {
		evs = append(evs, ttlDelete("a", "t", objectID(i), int64(i/3)))
	}
	writeEvents(t, s, ts, encodeAll(evs))
	keys, _ := logKeys(t, s)
	if len(keys) != 3 {
		t.Fatalf("%d records, want 3", len(keys))
	}
	if p, _ := keyPosition(keys[2]); p.Index != 2*maxCompact {
		t.Fatalf("the third record starts at %d", p.Index)
	}
	sameExpiryRecords(t, "scan", scanAll(t, s, Position{}), want(evs, ts))
	sameExpiryRecords(t, "from the second record's last", scanAll(t, s, Position{TS: ts, Index: 2*maxCompact - 1}), want(evs, ts)[2*maxCompact:])
}

// TestTrimMarksTheLastEventOfACompactRecord: the trim mark of a log whose
// newest trimmed record is compact is its last event, so a token inside
// the record is history lost, not a silent gap.
func TestTrimMarksTheLastEventOfACompactRecord(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 3}
	evs := mixedWrite()[1:6] // five deletions: one record
	writeEvents(t, s, ts, encodeAll(evs))
	later := []*Event{ttlDelete("a", "t", objectID(1), 1), ttlDelete("a", "t", objectID(2), 2)}
	writeEvents(t, s, Timestamp{T: 101, I: 1}, encodeAll(later))
	if ok, err := Trim(s, Timestamp{T: 101}); err != nil || !ok {
		t.Fatalf("trim: %v %v", ok, err)
	}
	mark, err := TrimmedTo(s)
	if err != nil || mark != (Position{TS: ts, Index: 4}) {
		t.Fatalf("trim mark %+v %v, want %+v", mark, err, Position{TS: ts, Index: 4})
	}
	sameExpiryRecords(t, "after the trim", scanAll(t, s, Position{}), want(later, Timestamp{T: 101, I: 1}))
	if ok, _ := Has(s, Position{TS: ts, Index: 2}); ok {
		t.Fatal("a trimmed event is still found")
	}
}

// TestWriteEventsIsDeterministic: the same events give the same bytes, as
// every replica set member must write.
func TestWriteEventsIsDeterministic(t *testing.T) {
	a, b := openMem(t), openMem(t)
	writeEvents(t, a, Timestamp{T: 1, I: 1}, encodeAll(mixedWrite()))
	writeEvents(t, b, Timestamp{T: 1, I: 1}, encodeAll(mixedWrite()))
	ka, va := logKeys(t, a)
	kb, vb := logKeys(t, b)
	if !reflect.DeepEqual(ka, kb) || !reflect.DeepEqual(va, vb) {
		t.Fatal("the same events wrote different logs")
	}
}

// TestCorruptCompactRecordIsAnError: a truncated compact record is
// reported, not read short.
func TestCorruptCompactRecordIsAnError(t *testing.T) {
	s := openMem(t)
	ts := Timestamp{T: 100, I: 3}
	writeEvents(t, s, ts, encodeAll(mixedWrite()[1:6]))
	keys, values := logKeys(t, s)
	b := s.NewBatch()
	if err := b.Set(keys[0], values[0][:len(values[0])-3]); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	err := Scan(s, Position{}, func(Record) (bool, error) { return true, nil })
	if err != ErrCorrupt {
		t.Fatalf("scan of a truncated record: %v", err)
	}
}

// The write and read of one 16k-deletion batch, as records per event (the
// format before compact records) and as compact records, side by side.
func BenchmarkExpiryBatch16k(b *testing.B) {
	const n = 16384
	evs := make([]*Event, n)
	for i := range evs {
		evs[i] = ttlDelete("coll", "expiresAt_1", objectID(i), 1_700_000_000_000+int64(i))
	}
	enc := encodeAll(evs)
	perEvent := func(bt storage.Batch, ts Timestamp, events [][]byte) error {
		var key, val []byte
		for i, ev := range events {
			key = AppendKey(key[:0], Position{TS: ts, Index: uint32(i)})
			val = AppendRecord(val[:0], 1, ev)
			if err := bt.Set(key, val); err != nil {
				return err
			}
		}
		return nil
	}
	for _, w := range []struct {
		name  string
		write func(storage.Batch, Timestamp, [][]byte) error
	}{{"per-event", perEvent}, {"compact", func(bt storage.Batch, ts Timestamp, e [][]byte) error { return WriteEvents(bt, ts, 1, e) }}} {
		b.Run("write/"+w.name, func(b *testing.B) {
			s := openMem(b)
			bytesOut := 0
			for i := 0; b.Loop(); i++ {
				bt := s.NewBatch()
				if err := w.write(bt, Timestamp{T: 1, I: uint32(i + 1)}, enc); err != nil {
					b.Fatal(err)
				}
				if r, ok := bt.(storage.Encodable); ok {
					rep, _ := r.Repr()
					bytesOut = len(rep)
				}
				if err := bt.Commit(false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bytesOut), "batch-bytes")
		})
		b.Run("read/"+w.name, func(b *testing.B) {
			s := openMem(b)
			bt := s.NewBatch()
			if err := w.write(bt, Timestamp{T: 1, I: 1}, enc); err != nil {
				b.Fatal(err)
			}
			if err := bt.Commit(false); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				got := 0
				if err := Scan(s, Position{}, func(Record) (bool, error) { got++; return true, nil }); err != nil || got != n {
					b.Fatal(got, err)
				}
			}
		})
	}
}
