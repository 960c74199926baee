package changestream

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Tail reads the log once for every stream of a server that is near its
// end. Without it, ten streams tailing the log each opened an iterator,
// read and decoded every record for themselves. The Tail keeps the most
// recent records, decoded once, in a ring: a stream whose position is in
// the ring takes the records after it from there, and the first stream
// to reach the ring's end reads the next records from the log (Scan) for
// all. A stream behind the ring reads the log itself, as before.
//
// The ring's records are shared by every stream that reads them: their
// fields must not be changed. It is kept only while two or more streams
// are open (Join, Leave): a lone stream gains nothing from it and would
// pay for its upkeep.
type Tail struct {
	reader  storage.Reader
	readers atomic.Int64 // open streams: Join, Leave

	mu sync.Mutex
	// ring holds, in log order, every record after from up to and
	// including end; ring[(head+i)%len(ring)] is the i-th of n.
	ring    []Record
	head, n int
	from    Position
	end     Position
	// bytes is about what the ring's records hold; budget bounds it, so
	// that large documents do not keep thousands of copies alive.
	bytes, budget int
}

const (
	// tailRecords is the ring's size: a few batches of a busy server
	// for streams a getMore or two apart.
	tailRecords = 4096
	// tailBytes bounds the bytes of the records in the ring.
	tailBytes = 32 << 20
	// recordOverhead is what a decoded record costs beyond its
	// documents' bytes, about.
	recordOverhead = 256
	// tailFill bounds the records one Scan adds, so that a burst of
	// changes is read in steps and the lock is held briefly.
	tailFill = 1024
	// tailHand bounds the records handed to a stream under the lock at
	// once; it calls fn on them without it.
	tailHand = 256
)

// NewTail returns a Tail over the log in r.
func NewTail(r storage.Reader) *Tail { return newTail(r, tailRecords, tailBytes) }

func newTail(r storage.Reader, size, budget int) *Tail {
	return &Tail{reader: r, ring: make([]Record, size), budget: budget}
}

// Join counts a stream in: with two or more the ring is kept.
func (t *Tail) Join() { t.readers.Add(1) }

// Leave counts a stream out.
func (t *Tail) Leave() { t.readers.Add(-1) }

// Readers is the number of streams counted in.
func (t *Tail) Readers() int64 { return t.readers.Load() }

// Read calls fn with each record after the position after, in order,
// until fn returns false or the records up to hwm have all been passed
// (none stamped after hwm's timestamp follow: ScanTo). hwm must be a
// position every record up to which was in the log before Read was called
// (Feed.Now taken before it). fn is called without the Tail's lock held, and must not change
// the records it is given.
func (t *Tail) Read(after, hwm Position, fn func(Record) (bool, error)) error {
	if t.readers.Load() < 2 {
		return ScanTo(t.reader, after, hwm, fn)
	}
	var buf []Record
	for {
		recs, inRing, err := t.take(after, hwm, buf[:0])
		if err != nil {
			return err
		}
		if !inRing {
			return ScanTo(t.reader, after, hwm, fn)
		}
		if len(recs) == 0 {
			return nil
		}
		for _, rec := range recs {
			if more, err := fn(rec); err != nil || !more {
				return err
			}
		}
		after = recs[len(recs)-1].Pos
		buf = recs
	}
}

// take appends to dst up to tailHand records after the position after,
// from the ring, reading the log on when the ring ends before hwm. It
// reports false when the ring no longer holds the records after after.
func (t *Tail) take(after, hwm Position, dst []Record) ([]Record, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 || after.After(t.end) {
		// The stream is past all the ring knows (a stream just opened,
		// or a ring idle while the log moved on): start the ring at it,
		// rather than reading the log from the ring's old end.
		t.rebase(after)
	}
	if t.from.After(after) {
		return dst, false, nil
	}
	i := t.search(after)
	if i == t.n && hwm.After(t.end) {
		if err := t.fill(hwm); err != nil {
			return dst, true, err
		}
		if t.from.After(after) { // records too large for the ring together
			return dst, false, nil
		}
		i = t.search(after)
	}
	for ; i < t.n && len(dst) < tailHand; i++ {
		dst = append(dst, t.at(i))
	}
	return dst, true, nil
}

// rebase empties the ring and starts it at p.
func (t *Tail) rebase(p Position) {
	clear(t.ring)
	t.head, t.n, t.bytes = 0, 0, 0
	t.from, t.end = p, p
}

// fill reads up to tailFill records after the ring's end from the log,
// never more records than the ring holds nor much more than half its
// bytes, so that they stay for the stream that asked (take checks: a
// single record larger than that may push out the ones before it). When
// the log ends before that, every record up to hwm has been read (the
// caller took hwm before), so the ring's end moves to it.
func (t *Tail) fill(hwm Position) error {
	limit := min(tailFill, len(t.ring))
	read, size, full := 0, 0, false
	err := ScanTo(t.reader, t.end, hwm, func(rec Record) (bool, error) {
		t.push(rec)
		read++
		size += recordSize(rec)
		full = read == limit || size >= t.budget/2
		return !full, nil
	})
	if err != nil {
		return err
	}
	if !full && hwm.After(t.end) {
		t.end = hwm
	}
	return nil
}

// push adds rec after the ring's last record, dropping the oldest one
// when the ring is full.
func (t *Tail) push(rec Record) {
	if t.n == len(t.ring) {
		t.drop()
	}
	t.ring[(t.head+t.n)%len(t.ring)] = rec
	t.n++
	t.end = rec.Pos
	t.bytes += recordSize(rec)
	for t.bytes > t.budget && t.n > 1 {
		t.drop()
	}
}

// drop removes the ring's oldest record.
func (t *Tail) drop() {
	old := &t.ring[t.head]
	t.from = old.Pos
	t.bytes -= recordSize(*old)
	*old = Record{}
	t.head = (t.head + 1) % len(t.ring)
	t.n--
}

// recordSize is about the memory a decoded record keeps alive.
func recordSize(rec Record) int {
	ev := rec.Event
	if ev == nil {
		return recordOverhead
	}
	return recordOverhead + len(ev.Doc) + len(ev.Pre) + len(ev.Update) + len(ev.Desc) + len(ev.Before)
}

// at is the ring's i-th record, oldest first.
func (t *Tail) at(i int) Record { return t.ring[(t.head+i)%len(t.ring)] }

// search is the index of the ring's first record after p.
func (t *Tail) search(p Position) int {
	return sort.Search(t.n, func(i int) bool { return t.at(i).Pos.After(p) })
}
