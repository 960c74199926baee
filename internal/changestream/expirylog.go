package changestream

import (
	"bytes"
	"encoding/binary"
)

// Compact expiry records (docs/design/0012, "The change log"). A write's
// run of TTL deletions of one collection by one index goes into the log as
// ONE record: the parts the deletions share once, per document only its
// _id and expiry moment. The record at (ts, k) holding n deletions stands
// for the positions (ts, k) … (ts, k+n-1); the write's next record is at
// (ts, k+n). Readers expand it into one Record per deletion (Scan).
//
// The value, after the wall clock time every record starts with:
//
//	compactMark(1) kind(1) n(uvarint) db coll uuid index afterSecs(varint)
//	n × { shared(uvarint) suffix(uvarint len + bytes) atDelta(varint) }
//
// A document's _id is the previous one's first shared bytes followed by
// suffix (the first one's previous is empty), and its expiry moment the
// previous one's plus atDelta (the first one's previous is 0): a pass
// deletes in the TTL index's order, by date, so neighbours share both.
// kind says whether the _ids are key-encoded (Event.ID) or BSON values
// (Event.RawID).
//
// compactMark cannot begin an Event's encoding: an op byte is below it,
// or has extFlags set. Which events compact is decided from their bytes
// alone, so every replica set member, writing the same events, writes the
// same records.
const compactMark = 0x40

// The kinds of _id a compact record holds.
const (
	compactKeyIDs byte = 0
	compactRawIDs byte = 1
)

// maxCompact bounds the deletions in one record: a reader resuming in its
// middle decodes it from its start.
const maxCompact = 1024

// expiryView is an encoded TTL deletion event, taken apart without
// copies: the shared parts and the document's own.
type expiryView struct {
	kind                byte
	db, coll, uuid, ix  []byte
	afterSecs, atMillis int64
	id                  []byte
}

// sameGroup reports whether v and o can share a compact record.
func (v *expiryView) sameGroup(o *expiryView) bool {
	return v.kind == o.kind && v.afterSecs == o.afterSecs && bytes.Equal(v.ix, o.ix) &&
		bytes.Equal(v.coll, o.coll) && bytes.Equal(v.db, o.db) && bytes.Equal(v.uuid, o.uuid)
}

// viewExpiry takes an encoded event apart when it is a TTL deletion and
// nothing else: a delete with the expired marker, an _id, maybe the
// collection's UUID, and no pre-image.
func viewExpiry(ev []byte, v *expiryView) bool {
	if len(ev) < 2 || Op(ev[0]&^extFlags) != OpDelete {
		return false
	}
	flags, ext := ev[1], byte(0)
	r := reader{b: ev[2:]}
	if ev[0]&extFlags != 0 {
		if len(ev) < 3 {
			return false
		}
		ext, r.b = ev[2], ev[3:]
	}
	if ext&^hasUUID != 0 || flags&^hasRawID != hasExpired {
		return false
	}
	v.db, v.coll, v.id = r.bytes(), r.bytes(), r.bytes()
	v.kind = compactKeyIDs
	if flags&hasRawID != 0 {
		if len(v.id) > 0 {
			return false // both forms of the _id: keep the event as it is
		}
		v.kind, v.id = compactRawIDs, r.bytes()
	}
	v.ix, v.afterSecs, v.atMillis = r.bytes(), r.varint(), r.varint()
	v.uuid = nil
	if ext&hasUUID != 0 {
		v.uuid = r.bytes()
	}
	return !r.bad && len(r.b) == 0
}

// compactWriter encodes a compact record's value.
type compactWriter struct {
	val    []byte
	n      int
	nAt    int // where n goes, once known
	prevID []byte
	prevAt int64
}

// start begins a record for the group of v; n is written by finish.
func (w *compactWriter) start(wallMillis int64, v *expiryView) {
	w.val = binary.BigEndian.AppendUint64(w.val[:0], uint64(wallMillis))
	w.val = append(w.val, compactMark, v.kind)
	w.nAt, w.n = len(w.val), 0
	w.val = appendBytes(w.val, v.db)
	w.val = appendBytes(w.val, v.coll)
	w.val = appendBytes(w.val, v.uuid)
	w.val = appendBytes(w.val, v.ix)
	w.val = binary.AppendVarint(w.val, v.afterSecs)
	w.prevID, w.prevAt = w.prevID[:0], 0
}

// add appends v's document.
func (w *compactWriter) add(v *expiryView) {
	shared := commonPrefix(w.prevID, v.id)
	w.val = binary.AppendUvarint(w.val, uint64(shared))
	w.val = appendBytes(w.val, v.id[shared:])
	w.val = binary.AppendVarint(w.val, v.atMillis-w.prevAt)
	w.prevID, w.prevAt = append(w.prevID[:0], v.id...), v.atMillis
	w.n++
}

// finish returns the value with its count in place.
func (w *compactWriter) finish() []byte {
	var nb [binary.MaxVarintLen64]byte
	cnt := binary.PutUvarint(nb[:], uint64(w.n))
	w.val = append(w.val, nb[:cnt]...)
	copy(w.val[w.nAt+cnt:], w.val[w.nAt:len(w.val)-cnt])
	copy(w.val[w.nAt:], nb[:cnt])
	return w.val
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// isCompact reports whether a record value is a compact expiry record.
func isCompact(value []byte) bool {
	return len(value) > wallLen && value[wallLen] == compactMark
}

// compactCount returns how many deletions a compact record value holds.
func compactCount(value []byte) (uint32, bool) {
	if len(value) < wallLen+2 {
		return 0, false
	}
	n, k := binary.Uvarint(value[wallLen+2:])
	if k <= 0 || n == 0 || n > maxCompact {
		return 0, false
	}
	return uint32(n), true
}

// lastCovered is the last position the record at p with value stands for.
func lastCovered(p Position, value []byte) (Position, bool) {
	if !isCompact(value) {
		return p, true
	}
	n, ok := compactCount(value)
	if !ok {
		return Position{}, false
	}
	p.Index += n - 1
	return p, true
}

// expandCompact calls fn with the deletions of the compact record at p
// (value is a copy the events may alias), from the one at position from
// on, until fn returns false. It reports whether fn asked for more.
func expandCompact(p Position, value []byte, from uint32, fn func(Record) (bool, error)) (bool, error) {
	n, ok := compactCount(value)
	if !ok {
		return false, ErrCorrupt
	}
	wall := int64(binary.BigEndian.Uint64(value))
	kind := value[wallLen+1]
	r := reader{b: value[wallLen+2:]}
	r.uvarint()
	db, coll, uuid, ix, after := string(r.bytes()), string(r.bytes()), r.bytes(), string(r.bytes()), r.varint()
	if r.bad || kind > compactRawIDs {
		return false, ErrCorrupt
	}
	if len(uuid) == 0 {
		uuid = nil
	}
	// The events, their markers and _ids come from one allocation each
	// for the record: a reader keeping one keeps the record's.
	evs := make([]Event, n-min(n, max(from, p.Index)-p.Index))
	exps := make([]Expiry, len(evs))
	ids := make([]byte, 0, len(value))
	var prev []byte
	var at int64
	for i := uint32(0); i < n; i++ {
		shared, suffix, delta := r.uvarint(), r.bytes(), r.varint()
		if r.bad || shared > uint64(len(prev)) {
			return false, ErrCorrupt
		}
		at += delta
		if p.Index+i < from {
			prev = append(prev[:shared], suffix...)
			continue
		}
		start := len(ids)
		ids = append(append(ids, prev[:shared]...), suffix...)
		id := ids[start:len(ids):len(ids)]
		prev = id
		k := len(evs) - int(n-i)
		exps[k] = Expiry{Index: ix, AfterSecs: after, AtMillis: at}
		ev := &evs[k]
		*ev = Event{Op: OpDelete, DB: db, Coll: coll, UUID: uuid, Expired: &exps[k]}
		if kind == compactRawIDs {
			ev.RawID = id
		} else {
			ev.ID = id
		}
		more, err := fn(Record{Pos: Position{TS: p.TS, Index: p.Index + i}, WallMillis: wall, Event: ev})
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

func (r *reader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}
