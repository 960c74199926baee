package rescache

import (
	"bytes"
	"sort"

	"github.com/mayflydb/mayfly/internal/storage"
)

// SliceIter is a storage.Iterator over a cached range's entries, sorted
// by key. It reads what the cache held when it was made.
type SliceIter struct {
	kvs []KV
	pos int // -1 or len(kvs): not positioned
}

var _ storage.Iterator = (*SliceIter)(nil)

// NewSliceIter iterates kvs, which must be sorted and stay unchanged.
func NewSliceIter(kvs []KV) *SliceIter { return &SliceIter{kvs: kvs, pos: -1} }

func (s *SliceIter) at(i int) bool {
	s.pos = i
	return s.Valid()
}

// First implements storage.Iterator.
func (s *SliceIter) First() bool { return s.at(0) }

// Last implements storage.Iterator.
func (s *SliceIter) Last() bool { return s.at(len(s.kvs) - 1) }

// SeekGE implements storage.Iterator.
func (s *SliceIter) SeekGE(key []byte) bool {
	return s.at(sort.Search(len(s.kvs), func(i int) bool { return bytes.Compare(s.kvs[i].Key, key) >= 0 }))
}

// SeekLT implements storage.Iterator.
func (s *SliceIter) SeekLT(key []byte) bool {
	return s.at(sort.Search(len(s.kvs), func(i int) bool { return bytes.Compare(s.kvs[i].Key, key) >= 0 }) - 1)
}

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
func (s *SliceIter) Valid() bool { return s.pos >= 0 && s.pos < len(s.kvs) }

// Key implements storage.Iterator.
func (s *SliceIter) Key() []byte {
	if !s.Valid() {
		return nil
	}
	return s.kvs[s.pos].Key
}

// Value implements storage.Iterator.
func (s *SliceIter) Value() []byte {
	if !s.Valid() {
		return nil
	}
	return s.kvs[s.pos].Value
}

// Error implements storage.Iterator.
func (s *SliceIter) Error() error { return nil }

// Close implements storage.Iterator.
func (s *SliceIter) Close() error {
	s.kvs = nil
	return nil
}
