package ttlentry

import "encoding/binary"

// A touch — an update that moves a document's date in a TTL index later,
// as a session store's updateOne({token}, {$set: {lastActivity: now}})
// does — writes the new entry and leaves the old one in place instead of
// deleting it. The entries it writes are loose: they carry no deletion
// record, and one of them may be stale (its date is no longer the
// document's). Whoever meets a loose entry judges it against the document
// (docstore's holdsEntry): the monitor deletes the document only when the
// entry's key is still the document's, and otherwise the entry alone,
// silently; index scans skip a stale entry as if it were not there.
//
// The value of a loose entry is
//
//	RecordTagLoose · uvarint(len(id)) · uvarint(n) · varint(date₁) ·
//	(n−1) × varint(dateᵢ − dateᵢ₋₁)
//
// where the dates (Unix milliseconds, oldest first) are the document's
// stale entries in the index that were not yet due when the entry was
// written, and the _id is the key's last len(id) bytes. A write that keeps
// at most a bound of them (docstore's maxStaleEntries), deleting the
// oldest beyond, and any other write deletes them all (docstore's
// updateAppending): a document touched without pause has at most that
// many stale entries, plus those already due, which the monitor's next
// pass removes.
//
// Stale entries are most of a touched collection's index bytes (each
// document keeps several), and every byte is flushed and compacted: so
// the _id is not repeated, and a date after the first is the few bytes of
// its distance from the one before (a session touched every few seconds:
// two bytes, not six). Entries written before carry RecordTagLooseFull:
//
//	RecordTagLooseFull · uvarint(len(id)) · id · uvarint(n) · n × varint(date)
//
// RecordTagLooseLog marks, in RecordTagLoose's format, the entry of a
// touch the storage engine held back with no log of its own
// (storage.TouchSetter): the entry is that log, and after a crash the
// document's date is restored from it (internal/touchrepair).
const (
	RecordTagLooseFull = 0x03
	RecordTagLoose     = 0x04
	RecordTagLooseLog  = 0x05
)

// IsLoose reports whether an index entry's value is a loose entry's.
func IsLoose(v []byte) bool {
	return len(v) > 0 && (v[0] == RecordTagLoose || v[0] == RecordTagLooseFull || v[0] == RecordTagLooseLog)
}

// LogsTouch reports whether a loose entry's value marks it as its
// touch's log (RecordTagLooseLog).
func LogsTouch(v []byte) bool { return len(v) > 0 && v[0] == RecordTagLooseLog }

// AppendLoose appends a loose entry's value for idEnc listing stale,
// marked as its touch's log when logs is set.
func AppendLoose(dst, idEnc []byte, stale []int64, logs bool) []byte {
	tag := byte(RecordTagLoose)
	if logs {
		tag = RecordTagLooseLog
	}
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(idEnc)))
	dst = binary.AppendUvarint(dst, uint64(len(stale)))
	var prev int64
	for _, d := range stale {
		dst = binary.AppendVarint(dst, d-prev)
		prev = d
	}
	return dst
}

// LooseSize bounds the length of AppendLoose's value.
func LooseSize(stale []int64) int {
	return 1 + binary.MaxVarintLen64*(2+len(stale))
}

// SplitLoose returns the _id and stale dates of a loose entry (key, v);
// ok is false when v is not a well-formed loose value.
func SplitLoose(key, v []byte) (id []byte, stale []int64, ok bool) {
	id, dates, ok := openLoose(key, v)
	if !ok {
		return nil, nil, false
	}
	for d, more := dates.next(); more; d, more = dates.next() {
		stale = append(stale, d)
	}
	if !dates.whole() {
		return nil, nil, false
	}
	return id, stale, true
}

// NewestStale returns the newest stale date a loose entry's value lists,
// without allocating; ok is false when v is not a well-formed loose value
// or lists none. Each stale entry of a document not yet due is the newest
// listed by exactly one of its later entries, so a reader counting
// documents by their entries can take that one off as it meets it.
func NewestStale(key, v []byte) (date int64, ok bool) {
	_, dates, ok := openLoose(key, v)
	if !ok {
		return 0, false
	}
	n := 0
	for d, more := dates.next(); more; d, more = dates.next() {
		date, n = d, n+1
	}
	return date, n > 0 && dates.whole()
}

// looseDates reads a loose value's stale dates, oldest first.
type looseDates struct {
	r     reader
	n     uint64 // dates left
	delta bool   // each date after the first is its distance from the one before
	prev  int64
}

// openLoose reads a loose value's header: its _id (the key's tail, or
// repeated in RecordTagLooseFull) and the count of its dates.
func openLoose(key, v []byte) (id []byte, dates looseDates, ok bool) {
	if !IsLoose(v) {
		return nil, dates, false
	}
	dates.r = reader{b: v[1:]}
	switch n := dates.r.uvarint(); {
	case v[0] == RecordTagLooseFull:
		id = dates.r.take(n)
	case n > 0 && n <= uint64(len(key)):
		id = key[len(key)-int(n):]
	default:
		return nil, dates, false
	}
	dates.delta = v[0] != RecordTagLooseFull
	dates.n = dates.r.uvarint()
	return id, dates, true
}

// next returns the next date; more is false after the last, or at a
// malformed one.
func (l *looseDates) next() (date int64, more bool) {
	if l.n == 0 || l.r.bad {
		return 0, false
	}
	d, w := binary.Varint(l.r.b)
	if w <= 0 {
		l.r.bad = true
		return 0, false
	}
	if l.delta {
		d += l.prev
	}
	l.n, l.r.b, l.prev = l.n-1, l.r.b[w:], d
	return d, true
}

// whole reports whether every date was read and nothing follows them.
func (l *looseDates) whole() bool { return l.n == 0 && !l.r.bad && len(l.r.b) == 0 }
