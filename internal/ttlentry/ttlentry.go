// Package ttlentry lays out the values of TTL index entries: a deletion
// record, which lets the expiry monitor delete a document from its entry
// alone, or a loose entry's stale dates. docstore writes and reads them;
// docs/design/0003 has the why.
package ttlentry

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// A TTL index entry carries, in its value, the deletion record of its
// document: the document's size and its keys in every secondary index. The
// monitor then deletes an expired document from the entry alone. Reading
// the document instead costs a random read per document when documents
// expire in another order than their _ids (sessions touched at random),
// and those reads, not the deletions, bounded the expiry rate.
//
// Entries written by an index build, and records written before the
// collection's indexes last changed, fall back to reading the document.
//
// The value of such an entry is
//
//	RecordTag · uvarint(len(id)) · id · uvarint(size) · uvarint(n) ·
//	n × (uvarint(indexID) · uvarint(keys) · keys × (uvarint(len) · key))
//
// with the indexes in catalog order. RecordTagMulti replaces RecordTag in
// the entries of a document that has several in the index (an array of
// dates), so that a walk needs to remember only those documents' _ids to
// take each document once. Every other entry's value is the bare encoded
// _id, whose first byte is a key-encoding type tag: the record tags (and the
// loose ones, RecordTagLoose, RecordTagLooseFull and RecordTagLooseLog) are
// none of them.
const (
	RecordTag      = 0x01
	RecordTagMulti = 0x02
)

// HasRecord reports whether an index entry's value carries a record.
func HasRecord(v []byte) bool {
	return len(v) > 0 && (v[0] == RecordTag || v[0] == RecordTagMulti)
}

// OnlyEntry reports whether an index entry's value says it is its
// document's only entry in the index.
func OnlyEntry(v []byte) bool { return len(v) > 0 && v[0] == RecordTag }

// MultiValue returns a TTL entry value marked as one of several.
func MultiValue(v []byte) []byte {
	out := append([]byte(nil), v...)
	out[0] = RecordTagMulti
	return out
}

// ID returns the encoded _id of the index entry (key, v).
func ID(key, v []byte) []byte {
	id, _, _ := Split(key, v)
	return id
}

// Split returns the encoded _id and, when the value has one, the deletion
// record (a loose entry has none). ok is false for a malformed tagged
// value, which is then returned whole as the _id so that no document is
// found under it.
func Split(key, v []byte) (id, rec []byte, ok bool) {
	if IsLoose(v) {
		if id, _, ok := SplitLoose(key, v); ok {
			return id, nil, true
		}
		return v, nil, false
	}
	if !HasRecord(v) {
		return v, nil, true
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || n > uint64(len(v)-1-w) {
		return v, nil, false
	}
	start := 1 + w
	return v[start : start+int(n)], v[start+int(n):], true
}

// AppendRecord appends the value of a TTL index entry for the document
// idEnc of the given size, whose keys in indexes (the secondary ones, in
// catalog order, each with its ID by id) are keys.
func AppendRecord[I any](dst, idEnc []byte, size int, indexes []I, id func(I) uint32, keys [][][]byte) []byte {
	dst = slices.Grow(dst, RecordSize(idEnc, size, indexes, id, keys))
	dst = append(dst, RecordTag)
	dst = binary.AppendUvarint(dst, uint64(len(idEnc)))
	dst = append(dst, idEnc...)
	dst = binary.AppendUvarint(dst, uint64(size))
	dst = binary.AppendUvarint(dst, uint64(len(indexes)))
	for i, ix := range indexes {
		dst = binary.AppendUvarint(dst, uint64(id(ix)))
		dst = binary.AppendUvarint(dst, uint64(len(keys[i])))
		for _, k := range keys[i] {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
		}
	}
	return dst
}

// RecordSize is the length of AppendRecord's value, so that it is made in
// one allocation, or in a write's key arena (which has room for an exact
// size more often than for a bound).
func RecordSize[I any](idEnc []byte, size int, indexes []I, id func(I) uint32, keys [][][]byte) int {
	n := 1 + uvarintLen(uint64(len(idEnc))) + len(idEnc) + uvarintLen(uint64(size)) + uvarintLen(uint64(len(indexes)))
	for i, ix := range indexes {
		n += uvarintLen(uint64(id(ix))) + uvarintLen(uint64(len(keys[i])))
		for _, k := range keys[i] {
			n += uvarintLen(uint64(len(k))) + len(k)
		}
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// WalkRecord checks that rec was written for indexes (each with its ID by
// id) and hands each key it lists to fn (which may be nil) with the
// position of its index. It returns the document's size; ok is false when
// rec is malformed or lists other indexes, and then the document must be
// read instead.
func WalkRecord[I any](rec []byte, indexes []I, id func(I) uint32, fn func(i int, key []byte)) (size int, ok bool) {
	r := reader{b: rec}
	size = int(r.uvarint())
	if r.uvarint() != uint64(len(indexes)) {
		return 0, false
	}
	for i, ix := range indexes {
		if r.uvarint() != uint64(id(ix)) {
			return 0, false
		}
		for n := r.uvarint(); n > 0 && !r.bad; n-- {
			key := r.take(r.uvarint())
			if fn != nil && !r.bad {
				fn(i, key)
			}
		}
	}
	return size, !r.bad && len(r.b) == 0
}

// reader reads a deletion record; once bad, every read returns zero.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[w:]
	return v
}

func (r *reader) take(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
