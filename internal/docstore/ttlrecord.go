package docstore

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
//	recordTag · uvarint(len(id)) · id · uvarint(size) · uvarint(n) ·
//	n × (uvarint(indexID) · uvarint(keys) · keys × (uvarint(len) · key))
//
// with the indexes in catalog order. recordTagMulti replaces recordTag in
// the entries of a document that has several in the index (an array of
// dates), so that a walk needs to remember only those documents' _ids to
// take each document once. Every other entry's value is the bare encoded
// _id, whose first byte is a key-encoding type tag: the record tags (and the
// loose ones, recordTagLoose and recordTagLooseFull) are none of them.
const (
	recordTag      = 0x01
	recordTagMulti = 0x02
)

// hasRecord reports whether an index entry's value carries a record.
func hasRecord(v []byte) bool {
	return len(v) > 0 && (v[0] == recordTag || v[0] == recordTagMulti)
}

// onlyEntry reports whether an index entry's value says it is its
// document's only entry in the index.
func onlyEntry(v []byte) bool { return len(v) > 0 && v[0] == recordTag }

// entryValue is the value of a document's entries in ix, which has keys
// of them: the bare _id, or in a TTL index ttlValue, marked when the
// document has several entries there.
func entryValue(ix *indexState, idEnc, ttlValue []byte, keys int) []byte {
	switch {
	case !ix.def.TTL:
		return idEnc
	case keys > 1:
		return multiEntryValue(ttlValue)
	}
	return ttlValue
}

// multiEntryValue returns a TTL entry value marked as one of several.
func multiEntryValue(v []byte) []byte {
	out := append([]byte(nil), v...)
	out[0] = recordTagMulti
	return out
}

// entryID returns the encoded _id of the index entry (key, v).
func entryID(key, v []byte) []byte {
	id, _, _ := splitEntryValue(key, v)
	return id
}

// splitEntryValue returns the encoded _id and, when the value has one, the
// deletion record (a loose entry has none: ttlloose.go). ok is false for a
// malformed tagged value, which is then returned whole as the _id so that
// no document is found under it.
func splitEntryValue(key, v []byte) (id, rec []byte, ok bool) {
	if isLoose(v) {
		if id, _, ok := splitLoose(key, v); ok {
			return id, nil, true
		}
		return v, nil, false
	}
	if !hasRecord(v) {
		return v, nil, true
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || n > uint64(len(v)-1-w) {
		return v, nil, false
	}
	start := 1 + w
	return v[start : start+int(n)], v[start+int(n):], true
}

// appendTTLEntryValue appends the value of a TTL index entry for the
// document idEnc of the given size, whose keys in indexes (the secondary
// ones, in catalog order) are keys.
func appendTTLEntryValue(dst, idEnc []byte, size int, indexes []*indexState, keys [][][]byte) []byte {
	dst = slices.Grow(dst, ttlEntryValueSize(idEnc, size, indexes, keys))
	dst = append(dst, recordTag)
	dst = binary.AppendUvarint(dst, uint64(len(idEnc)))
	dst = append(dst, idEnc...)
	dst = binary.AppendUvarint(dst, uint64(size))
	dst = binary.AppendUvarint(dst, uint64(len(indexes)))
	for i, ix := range indexes {
		dst = binary.AppendUvarint(dst, uint64(ix.def.ID))
		dst = binary.AppendUvarint(dst, uint64(len(keys[i])))
		for _, k := range keys[i] {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
		}
	}
	return dst
}

// ttlEntryValueSize is the length of appendTTLEntryValue's value, so
// that it is made in one allocation, or in a write's key arena (which
// has room for an exact size more often than for a bound).
func ttlEntryValueSize(idEnc []byte, size int, indexes []*indexState, keys [][][]byte) int {
	n := 1 + uvarintLen(uint64(len(idEnc))) + len(idEnc) + uvarintLen(uint64(size)) + uvarintLen(uint64(len(indexes)))
	for i, ix := range indexes {
		n += uvarintLen(uint64(ix.def.ID)) + uvarintLen(uint64(len(keys[i])))
		for _, k := range keys[i] {
			n += uvarintLen(uint64(len(k))) + len(k)
		}
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// walkRecord checks that rec was written for indexes and hands each key it
// lists to fn (which may be nil) with the position of its index. It
// returns the document's size; ok is false when rec is malformed or lists
// other indexes, and then the document must be read instead.
func walkRecord(rec []byte, indexes []*indexState, fn func(i int, key []byte)) (size int, ok bool) {
	r := recordReader{b: rec}
	size = int(r.uvarint())
	if r.uvarint() != uint64(len(indexes)) {
		return 0, false
	}
	for i, ix := range indexes {
		if r.uvarint() != uint64(ix.def.ID) {
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

// recordReader reads a deletion record; once bad, every read returns zero.
type recordReader struct {
	b   []byte
	bad bool
}

func (r *recordReader) uvarint() uint64 {
	v, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[w:]
	return v
}

func (r *recordReader) take(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// removeByRecord deletes the document idEnc and every index entry its
// deletion record lists, without reading it. It deletes nothing and
// returns false when the record does not fit the collection's indexes.
// The document expired at expiredAt (Unix ns; 0: not known) by the TTL
// index expiring, whose entry for it is due then too: the engine's cache
// need not look for either (delExpired).
func (t *tx) removeByRecord(idEnc, rec []byte, expiring *indexState, expiredAt int64) (bool, error) {
	secondary := t.st.indexes[1:]
	size, ok := walkRecord(rec, secondary, nil)
	if !ok {
		return false, nil
	}
	var err error
	walkRecord(rec, secondary, func(i int, key []byte) {
		if err == nil {
			at := int64(0)
			if secondary[i] == expiring {
				at = expiredAt
			}
			err = t.delExpired(2+i, t.arenaKey(secondary[i].prefix, key, idEnc), at)
			t.keysRemoved++
		}
	})
	if err != nil {
		return false, err
	}
	if t.docPrefix == nil {
		t.docPrefix = docPrefix(t.st.meta.ID)
	}
	if err := t.delExpired(0, t.arenaKey(t.docPrefix, nil, idEnc), expiredAt); err != nil {
		return false, err
	}
	t.keysRemoved++
	t.dCount--
	t.dSize -= int64(size)
	return true, nil
}

// arenaKey returns prefix·mid·idEnc built in the transaction's arena: a
// batch of expiry deletions builds thousands of keys, and an allocation
// each is garbage-collection work that grows with the deletion rate. The
// keys live as long as the transaction.
func (t *tx) arenaKey(prefix, mid, idEnc []byte) []byte {
	n := len(prefix) + len(mid) + len(idEnc)
	if cap(t.arena)-len(t.arena) < n {
		t.arena = make([]byte, 0, max(arenaChunk, n))
	}
	start := len(t.arena)
	t.arena = append(append(append(t.arena, prefix...), mid...), idEnc...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// arenaChunk is the size of each piece of a transaction's key arena.
const arenaChunk = 64 << 10
