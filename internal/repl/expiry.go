package repl

import (
	"encoding/binary"
	"errors"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Compact expiries. The primary's TTL monitor hands its deletions to the
// batch as TTL entry keys (storage.ExpiryBatch) when the entry holds the
// document's deletion record. Each key travels alone, sharing its first
// bytes with the key before (a pass walks one index in date order, so a
// key repeats the index prefix and most of the date), about 20 bytes a
// document instead of every key the deletion removes and its change
// event. Every member, the primary included, deletes the documents at
// apply from the records in its own storage (Expirer), after every entry
// before it is in storage: an entry a touch replaced in between is gone,
// and the delete is void on every member alike.

// expiryKeys is an entry's expiries section as encoded: a count, then
// each key as (shared, len, rest).
type expiryKeys struct {
	enc  []byte
	n    int
	last []byte // the last key added (batch side)
}

// add appends key to the section.
func (x *expiryKeys) add(key []byte) {
	shared := commonPrefix(x.last, key)
	x.enc = binary.AppendUvarint(x.enc, uint64(shared))
	x.enc = binary.AppendUvarint(x.enc, uint64(len(key)-shared))
	x.enc = append(x.enc, key[shared:]...)
	x.last = append(x.last[:0], key...)
	x.n++
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var errBadExpiries = errors.New("repl: log entry: bad expiries section")

// decodeExpiryKeys reads an entry's expiries section from b; the section
// it returns holds the keys only (enc) and their count.
func decodeExpiryKeys(b []byte) (expiryKeys, []byte, error) {
	n, rest, ok := uvarint(b)
	if !ok || n > uint64(len(rest)) {
		return expiryKeys{}, nil, errBadExpiries
	}
	start := rest
	for range n {
		var size uint64
		if _, rest, ok = uvarint(rest); !ok {
			return expiryKeys{}, nil, errBadExpiries
		}
		if size, rest, ok = uvarint(rest); !ok || size > uint64(len(rest)) {
			return expiryKeys{}, nil, errBadExpiries
		}
		rest = rest[size:]
	}
	return expiryKeys{enc: start[:len(start)-len(rest)], n: int(n)}, rest, nil
}

// keys returns the section's keys, each built whole.
func (x expiryKeys) keys() ([][]byte, error) {
	out := make([][]byte, 0, x.n)
	var prev []byte
	b := x.enc
	arena := make([]byte, 0, 2*len(b))
	for range x.n {
		shared, rest, ok := uvarint(b)
		if !ok {
			return nil, errBadExpiries
		}
		size, rest, ok := uvarint(rest)
		if !ok || size > uint64(len(rest)) || shared > uint64(len(prev)) {
			return nil, errBadExpiries
		}
		start := len(arena)
		arena = append(append(arena, prev[:shared]...), rest[:size]...)
		key := arena[start:len(arena):len(arena)]
		out = append(out, key)
		prev, b = key, rest[size:]
	}
	return out, nil
}

// Expirer deletes, into b, the documents whose TTL entries keys name and
// that are still there, with their change events; publish makes their
// counts known once b is in storage. The docstore implements it.
type Expirer interface {
	ApplyExpiries(b storage.Batch, keys [][]byte) (events [][]byte, publish func(), err error)
}
