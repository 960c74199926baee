package rescache

import (
	"bytes"
	"encoding/binary"
	"sort"

	"github.com/mayflydb/mayfly/internal/storage"
)

// SliceIter is a storage.Iterator over a range's entries, sorted by key,
// read in place from their encoded bytes (appendEntry). It reads what the
// cache held when it was made.
type SliceIter struct {
	data []byte // never changed
	offs [maxRangeEntries]int32
	n    int
	pos  int // -1 or n: not positioned
	// inline holds data when it fits (expandRange): a token's range, one
	// entry, then costs one allocation, not two. Written only before the
	// iterator is handed out, like any data.
	inline [inlineRangeData]byte
}

// inlineRangeData is the room a SliceIter has for its data: a range of
// one or two index entries (a key of a few dozen bytes and an _id).
const inlineRangeData = 128

var _ storage.Iterator = (*SliceIter)(nil)

// NewSliceIter iterates a copy of kvs (at most MaxRangeEntries, sorted).
func NewSliceIter(kvs []KV) *SliceIter {
	it := &SliceIter{}
	data := it.inline[:0] // append moves it to the heap when it outgrows it
	for _, kv := range kvs {
		data = appendEntry(data, kv)
	}
	it.index(data, len(kvs))
	return it
}

// appendEntry appends one entry as a range's data holds it: the key and
// the value, each after its length.
func appendEntry(data []byte, kv KV) []byte {
	data = binary.AppendUvarint(data, uint64(len(kv.Key)))
	data = append(data, kv.Key...)
	data = binary.AppendUvarint(data, uint64(len(kv.Value)))
	return append(data, kv.Value...)
}

// A cached range's data holds each entry's key without the range's lower
// bound, which every key starts with and the data holds once, and its
// value, unless the value is the key's suffix (an index entry whose value
// is its document's _id, which ends its key: a token's lookup):
//
//	uvarint(len(suffix)) · suffix · uvarint(2·len(value)) · value
//	uvarint(len(suffix)) · suffix · uvarint(1)
//
// A session's token range holds its lower bound and its _id once each,
// where it held both three times.

// appendRangeEntry appends kv, whose key starts with lo, as a range's
// data holds it.
func appendRangeEntry(data, lo []byte, kv KV) []byte {
	suffix := kv.Key[len(lo):]
	data = binary.AppendUvarint(data, uint64(len(suffix)))
	data = append(data, suffix...)
	if valueIsSuffix(lo, kv) {
		return binary.AppendUvarint(data, 1)
	}
	data = binary.AppendUvarint(data, 2*uint64(len(kv.Value)))
	return append(data, kv.Value...)
}

// valueIsSuffix reports whether kv's value is the part of its key after
// lo, and not empty.
func valueIsSuffix(lo []byte, kv KV) bool {
	return len(kv.Value) > 0 && bytes.Equal(kv.Key[len(lo):], kv.Value)
}

// expandRange is an iterator over a copy of the n entries of the range
// at lo whose data (appendRangeEntry) is payload: whole keys and values,
// in one allocation. Each entry grows by lo, two lengths, and at most its
// suffix again (a value held as the suffix), which payload bounds.
func expandRange(lo, payload []byte, n int) *SliceIter {
	it := &SliceIter{}
	size := 2*len(payload) + n*(len(lo)+2*binary.MaxVarintLen32)
	data := it.inline[:0]
	if size > len(it.inline) {
		data = make([]byte, 0, size)
	}
	rest := payload
	for range n {
		var suffix, value []byte
		suffix, value, rest = cutRangeEntry(rest)
		data = binary.AppendUvarint(data, uint64(len(lo)+len(suffix)))
		data = append(append(data, lo...), suffix...)
		data = binary.AppendUvarint(data, uint64(len(value)))
		data = append(data, value...)
	}
	it.index(data, n)
	return it
}

// cutRangeEntry splits the first entry appendRangeEntry wrote off data.
func cutRangeEntry(data []byte) (suffix, value, rest []byte) {
	suffix, rest = cutFramed(data)
	code, w := binary.Uvarint(rest)
	rest = rest[w:]
	if code&1 == 1 {
		return suffix, suffix, rest
	}
	n := int(code / 2)
	return suffix, rest[:n:n], rest[n:]
}

// index makes it an unpositioned iterator over the n entries appendEntry
// wrote to data (at most maxRangeEntries).
func (it *SliceIter) index(data []byte, n int) {
	it.data, it.n, it.pos = data, n, -1
	off := 0
	for i := range n {
		it.offs[i] = int32(off)
		_, rest := cutFramed(data[off:])
		_, rest = cutFramed(rest)
		off = len(data) - len(rest)
	}
}

// cutFramed splits off the length-prefixed bytes at the start of data.
func cutFramed(data []byte) ([]byte, []byte) {
	l, w := binary.Uvarint(data)
	end := w + int(l)
	return data[w:end:end], data[end:]
}

// entry is the key and value at i.
func (s *SliceIter) entry(i int) KV {
	k, rest := cutFramed(s.data[s.offs[i]:])
	v, _ := cutFramed(rest)
	return KV{Key: k, Value: v}
}

func (s *SliceIter) at(i int) bool {
	s.pos = i
	return s.Valid()
}

func (s *SliceIter) search(key []byte) int {
	return sort.Search(s.n, func(i int) bool { return bytes.Compare(s.entry(i).Key, key) >= 0 })
}

// First implements storage.Iterator.
func (s *SliceIter) First() bool { return s.at(0) }

// Last implements storage.Iterator.
func (s *SliceIter) Last() bool { return s.at(s.n - 1) }

// SeekGE implements storage.Iterator.
func (s *SliceIter) SeekGE(key []byte) bool { return s.at(s.search(key)) }

// SeekLT implements storage.Iterator.
func (s *SliceIter) SeekLT(key []byte) bool { return s.at(s.search(key) - 1) }

// Next implements storage.Iterator.
func (s *SliceIter) Next() bool {
	if !s.Valid() {
		return false
	}
	return s.at(s.pos + 1)
}

// Prev implements storage.Iterator.
func (s *SliceIter) Prev() bool {
	if !s.Valid() {
		return false
	}
	return s.at(s.pos - 1)
}

// Valid implements storage.Iterator.
func (s *SliceIter) Valid() bool { return s.pos >= 0 && s.pos < s.n }

// Key implements storage.Iterator.
func (s *SliceIter) Key() []byte {
	if !s.Valid() {
		return nil
	}
	return s.entry(s.pos).Key
}

// Value implements storage.Iterator.
func (s *SliceIter) Value() []byte {
	if !s.Valid() {
		return nil
	}
	return s.entry(s.pos).Value
}

// Error implements storage.Iterator.
func (s *SliceIter) Error() error { return nil }

// Close implements storage.Iterator.
func (s *SliceIter) Close() error {
	s.data, s.n = nil, 0
	return nil
}
