package changestream

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/storage"
)

// RecentLog reads the log once for every stream of a server that is near
// its end. Without it, ten streams following the log each opened an iterator,
// read and decoded every record for themselves. The RecentLog keeps the most
// recent records, decoded once, in a ring: a stream whose position is in
// the ring takes the records after it from there, and the first stream
// to reach the ring's end reads the next records from the log (Scan) for
// all. A stream behind the ring reads the log itself, as before.
//
// The ring's records are shared by every stream that reads them: their
// fields must not be changed. It is kept only while two or more streams
// are open (Join, Leave): a lone stream gains nothing from it and would
// pay for its upkeep.
type RecentLog struct {
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
	// recentRecords is the ring's size: a few batches of a busy server
	// for streams a getMore or two apart.
	recentRecords = 4096
	// recentBytes bounds the bytes of the records in the ring.
	recentBytes = 32 << 20
	// recordOverhead is what a decoded record costs beyond its
	// documents' bytes, about.
	recordOverhead = 256
	// recentFill bounds the records one Scan adds, so that a burst of
	// changes is read in steps and the lock is held briefly.
	recentFill = 1024
	// recentHand bounds the records handed to a stream under the lock at
	// once; it calls fn on them without it.
	recentHand = 256
)

// NewRecentLog returns a RecentLog over the log in r.
func NewRecentLog(r storage.Reader) *RecentLog { return newRecentLog(r, recentRecords, recentBytes) }

func newRecentLog(r storage.Reader, size, budget int) *RecentLog {
	return &RecentLog{reader: r, ring: make([]Record, size), budget: budget}
}

// Join counts a stream in: with two or more the ring is kept.
func (l *RecentLog) Join() { l.readers.Add(1) }

// Leave counts a stream out.
func (l *RecentLog) Leave() { l.readers.Add(-1) }

// Readers is the number of streams counted in.
func (l *RecentLog) Readers() int64 { return l.readers.Load() }

// Read calls fn with each record after the position after, in order,
// until fn returns false or the records up to hwm have all been passed
// (none stamped after hwm's timestamp follow: ScanTo). hwm must be a
// position every record up to which was in the log before Read was called
// (Feed.Now taken before it). fn is called without the RecentLog's lock held, and must not change
// the records it is given.
func (l *RecentLog) Read(after, hwm Position, fn func(Record) (bool, error)) error {
	if l.readers.Load() < 2 {
		return ScanTo(l.reader, after, hwm, fn)
	}
	var buf []Record
	for {
		recs, inRing, err := l.take(after, hwm, buf[:0])
		if err != nil {
			return err
		}
		if !inRing {
			return ScanTo(l.reader, after, hwm, fn)
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

// take appends to dst up to recentHand records after the position after,
// from the ring, reading the log on when the ring ends before hwm. It
// reports false when the ring no longer holds the records after after.
func (l *RecentLog) take(after, hwm Position, dst []Record) ([]Record, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 || after.After(l.end) {
		// The stream is past all the ring knows (a stream just opened,
		// or a ring idle while the log moved on): start the ring at it,
		// rather than reading the log from the ring's old end.
		l.rebase(after)
	}
	if l.from.After(after) {
		return dst, false, nil
	}
	i := l.search(after)
	if i == l.n && hwm.After(l.end) {
		if err := l.fill(hwm); err != nil {
			return dst, true, err
		}
		if l.from.After(after) { // records too large for the ring together
			return dst, false, nil
		}
		i = l.search(after)
	}
	for ; i < l.n && len(dst) < recentHand; i++ {
		dst = append(dst, l.at(i))
	}
	return dst, true, nil
}

// rebase empties the ring and starts it at p.
func (l *RecentLog) rebase(p Position) {
	clear(l.ring)
	l.head, l.n, l.bytes = 0, 0, 0
	l.from, l.end = p, p
}

// fill reads up to recentFill records after the ring's end from the log,
// never more records than the ring holds nor much more than half its
// bytes, so that they stay for the stream that asked (take checks: a
// single record larger than that may push out the ones before it). When
// the log ends before that, every record up to hwm has been read (the
// caller took hwm before), so the ring's end moves to it.
func (l *RecentLog) fill(hwm Position) error {
	limit := min(recentFill, len(l.ring))
	read, size, full := 0, 0, false
	err := ScanTo(l.reader, l.end, hwm, func(rec Record) (bool, error) {
		l.push(rec)
		read++
		size += recordSize(rec)
		full = read == limit || size >= l.budget/2
		return !full, nil
	})
	if err != nil {
		return err
	}
	if !full && hwm.After(l.end) {
		l.end = hwm
	}
	return nil
}

// push adds rec after the ring's last record, dropping the oldest one
// when the ring is full.
func (l *RecentLog) push(rec Record) {
	if l.n == len(l.ring) {
		l.drop()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = rec
	l.n++
	l.end = rec.Pos
	l.bytes += recordSize(rec)
	for l.bytes > l.budget && l.n > 1 {
		l.drop()
	}
}

// drop removes the ring's oldest record.
func (l *RecentLog) drop() {
	old := &l.ring[l.head]
	l.from = old.Pos
	l.bytes -= recordSize(*old)
	*old = Record{}
	l.head = (l.head + 1) % len(l.ring)
	l.n--
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
func (l *RecentLog) at(i int) Record { return l.ring[(l.head+i)%len(l.ring)] }

// search is the index of the ring's first record after p.
func (l *RecentLog) search(p Position) int {
	return sort.Search(l.n, func(i int) bool { return l.at(i).Pos.After(p) })
}
