package changestream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Record is one change read from the log.
type Record struct {
	Pos        Position
	WallMillis int64
	Event      *Event
}

// LastTimestamp returns the timestamp of the newest record (zero when the
// log is empty).
func LastTimestamp(r storage.Reader) (Timestamp, error) {
	it, err := r.NewIter(LogStart, LogEnd)
	if err != nil {
		return Timestamp{}, fmt.Errorf("changestream: last: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return Timestamp{}, it.Error()
	}
	p, _ := keyPosition(it.Key())
	return p.TS, nil
}

// Scan calls fn with each record after the position after, in order,
// until fn returns false or the log ends. The record's byte fields are
// copies fn may keep. A compact record comes as one Record per deletion
// it holds, each with its own position; when after falls inside one, the
// scan starts inside it.
func Scan(r storage.Reader, after Position, fn func(Record) (bool, error)) error {
	return scan(r, after, LogEnd, fn)
}

// ScanTo is Scan up to the high-water mark hwm (Feed.Now): it reads no
// record stamped after hwm's timestamp. A standalone Engine commits
// batches out of stamp order, so the log may hold a record stamped after
// one not yet in it; Feed.Now stays before both until both are in, and a
// reader that keeps to it never passes over the missing one.
func ScanTo(r storage.Reader, after, hwm Position, fn func(Record) (bool, error)) error {
	return scan(r, after, append(Key(HighWater(hwm.TS)), 0), fn)
}

func scan(r storage.Reader, after Position, upper []byte, fn func(Record) (bool, error)) error {
	// A record that covers after is stamped after.TS: the bound keeps
	// the trim mark out.
	lower := Key(Position{TS: after.TS})
	if bytes.Compare(lower, upper) >= 0 {
		// A stream ahead of the high-water mark (startAtOperationTime
		// in the future): nothing to read yet.
		return nil
	}
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return fmt.Errorf("changestream: scan: %w", err)
	}
	defer it.Close()
	ok, from := startAt(it, after)
	for ; ok; ok = it.Next() {
		if more, err := emitRecord(it.Key(), it.Value(), from, fn); err != nil || !more {
			return err
		}
		from = 0
	}
	return it.Error()
}

// startAt puts it on the first record that holds a change after the
// position after: the compact record that covers the next position, from
// that position on, or else the first record after it.
func startAt(it storage.Iterator, after Position) (bool, uint32) {
	lower := append(Key(after), 0) // strictly after
	if after.TS != (Timestamp{}) && after.Index != math.MaxUint32 && it.SeekLT(lower) {
		p, _ := keyPosition(it.Key())
		if last, ok := lastCovered(p, it.Value()); ok && p.TS == after.TS && last.Index > after.Index {
			return true, after.Index + 1
		}
	}
	return it.SeekGE(lower), 0
}

// emitRecord calls fn with the record at key, or with those a compact
// record holds from the position from on.
func emitRecord(key, value []byte, from uint32, fn func(Record) (bool, error)) (bool, error) {
	if isCompact(value) {
		p, ok := keyPosition(key)
		if !ok {
			return false, ErrCorrupt
		}
		return expandCompact(p, append([]byte(nil), value...), from, fn)
	}
	rec, err := decodeRecord(key, value)
	if err != nil {
		return false, err
	}
	return fn(rec)
}

func decodeRecord(key, value []byte) (Record, error) {
	p, ok := keyPosition(key)
	if !ok || len(value) < wallLen {
		return Record{}, ErrCorrupt
	}
	ev, err := Decode(append([]byte(nil), value[wallLen:]...))
	if err != nil {
		return Record{}, err
	}
	return Record{Pos: p, WallMillis: int64(binary.BigEndian.Uint64(value)), Event: ev}, nil
}

// Has reports whether the log holds the change at p, in a record of its
// own or inside a compact one.
func Has(r storage.Reader, p Position) (bool, error) {
	it, err := r.NewIter(Key(Position{TS: p.TS}), append(Key(p), 0))
	if err != nil {
		return false, fmt.Errorf("changestream: find: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return false, it.Error()
	}
	at, ok := keyPosition(it.Key())
	if !ok || at.TS != p.TS || at.TS == (Timestamp{}) {
		return false, nil
	}
	last, ok := lastCovered(at, it.Value())
	return ok && last.Index >= p.Index, nil
}

// TrimmedTo returns the position of the newest record trimming removed
// (zero: none): a stream resuming before it has lost history.
func TrimmedTo(r storage.Reader) (Position, error) {
	v, err := r.Get(trimKey)
	if errors.Is(err, storage.ErrNotFound) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("changestream: trim mark: %w", err)
	}
	p, ok := keyPosition(v)
	if !ok {
		return Position{}, ErrCorrupt
	}
	return p, nil
}

// Trim deletes the records stamped before ts and moves the trim mark to
// the newest of them. It reports whether it deleted anything. The writes
// are local: each member trims its own copy of the log.
func Trim(eng storage.Engine, ts Timestamp) (bool, error) {
	last, found, err := lastBefore(eng, ts)
	if err != nil || !found {
		return false, err
	}
	b := eng.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(recordsStart, append(Key(last), 0)); err != nil {
		return false, fmt.Errorf("changestream: trim: %w", err)
	}
	if err := b.Set(trimKey, Key(last)); err != nil {
		return false, fmt.Errorf("changestream: trim: %w", err)
	}
	if err := b.Commit(false); err != nil {
		return false, fmt.Errorf("changestream: trim: %w", err)
	}
	return true, nil
}

// lastBefore finds the last position of the newest record stamped before
// ts (of a compact record, the last change it holds).
func lastBefore(r storage.Reader, ts Timestamp) (Position, bool, error) {
	it, err := r.NewIter(recordsStart, Key(Position{TS: ts}))
	if err != nil {
		return Position{}, false, fmt.Errorf("changestream: trim: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return Position{}, false, it.Error()
	}
	p, ok := keyPosition(it.Key())
	if !ok {
		return Position{}, false, ErrCorrupt
	}
	last, ok := lastCovered(p, it.Value())
	if !ok {
		return Position{}, false, ErrCorrupt
	}
	return last, true, nil
}

// Feed is what change streams read: the log in storage, the newest
// timestamp whose changes are all in it, and the signal of new ones.
type Feed struct {
	Reader storage.Reader
	Latest func() Timestamp
	Signal *Signal
	// Record, when set, turns the log on before a new stream starts (a
	// standalone server's log is off until then: Engine.Record).
	Record func() error
	// CatchUp, when set, moves the log's end up to the cluster time
	// gossiped to the server (a shard's no-op entry) before a stream
	// reads: its high-water mark then passes the other shards' events.
	// It is best effort; the stream reads what is there.
	CatchUp func(ctx context.Context)
}

// Now is the position after every change committed so far: where a new
// stream starts. A member that has not applied an entry since it started
// knows no timestamp yet; it reads the log's own end instead.
func (f *Feed) Now() (Position, error) {
	latest := f.Latest()
	if latest != (Timestamp{}) {
		return HighWater(latest), nil
	}
	last, err := LastTimestamp(f.Reader)
	if err != nil {
		return Position{}, err
	}
	if last.After(latest) {
		latest = last
	}
	return HighWater(latest), nil
}

// ScanBack calls fn with the log's writes before the timestamp before
// (zero: the log's end), newest first: each call has every change of one
// timestamp, in order. It stops when fn returns false or the log begins.
func ScanBack(r storage.Reader, before Timestamp, fn func([]Record) (bool, error)) error {
	upper := LogEnd
	if before != (Timestamp{}) {
		upper = Key(Position{TS: before})
	}
	it, err := r.NewIter(recordsStart, upper)
	if err != nil {
		return fmt.Errorf("changestream: scan back: %w", err)
	}
	defer it.Close()
	for ok := it.Last(); ok; {
		p, found := keyPosition(it.Key())
		if !found {
			return ErrCorrupt
		}
		var entries [][2][]byte
		for ; ok; ok = it.Prev() {
			q, _ := keyPosition(it.Key())
			if q.TS != p.TS {
				break
			}
			entries = append(entries, [2][]byte{append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)})
		}
		var group []Record
		for i := len(entries) - 1; i >= 0; i-- {
			if _, err := emitRecord(entries[i][0], entries[i][1], 0, func(rec Record) (bool, error) {
				group = append(group, rec)
				return true, nil
			}); err != nil {
				return err
			}
		}
		if more, err := fn(group); err != nil || !more {
			return err
		}
	}
	return it.Error()
}

// WriteStats counts the writes the log holds (its distinct timestamps)
// and the bytes of their records, reading keys and values without
// decoding them, up to limit writes (0: all). complete is false when it
// stopped there; next is then the key of the first record not read.
func WriteStats(r storage.Reader, limit int64) (writes, size int64, next []byte, complete bool, err error) {
	it, err := r.NewIter(recordsStart, LogEnd)
	if err != nil {
		return 0, 0, nil, false, fmt.Errorf("changestream: write stats: %w", err)
	}
	defer it.Close()
	var last Timestamp
	for ok := it.First(); ok; ok = it.Next() {
		p, found := keyPosition(it.Key())
		if !found {
			return 0, 0, nil, false, ErrCorrupt
		}
		if p.TS != last {
			if limit > 0 && writes == limit {
				return writes, size, append([]byte(nil), it.Key()...), false, nil
			}
			writes++
			last = p.TS
		}
		size += int64(len(it.Key()) + len(it.Value()))
	}
	return writes, size, nil, true, it.Error()
}
