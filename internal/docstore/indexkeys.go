package docstore

import (
	"bytes"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// maxKeysPerDoc bounds the multikey fan-out of one document in one index.
const maxKeysPerDoc = 100000

// keyValues returns, for each index field, the values the index stores for
// doc: array elements are indexed one by one (an empty array as undefined)
// and a missing field as null. indexed is false when a sparse index skips
// the document.
func (ix *indexState) keyValues(doc bson.D) (vals [][]any, indexed bool, err error) {
	if ix.hashed {
		return ix.hashedKeyValues(doc)
	}
	if ix.partial != nil && !ix.partial.Match(doc) {
		return nil, false, nil
	}
	vals = make([][]any, len(ix.def.Fields))
	allMissing, arrays := true, 0
	for i, f := range ix.def.Fields {
		keys, missing := bsonutil.IndexKeys(doc, f.Path)
		if !missing {
			allMissing = false
		}
		if len(keys) > 1 {
			arrays++
		}
		vals[i] = keys
	}
	if ix.def.Sparse && allMissing {
		return nil, false, nil
	}
	if arrays > 1 {
		return nil, false, mongoerr.Newf(mongoerr.CannotIndexParallelArrays, "cannot index parallel arrays [%s]", ix.def.Name)
	}
	return vals, true, nil
}

// entryKeys returns the encoded key parts (without the index prefix and the
// _id suffix) of doc in ix, deduplicated.
func (ix *indexState) entryKeys(doc bson.D) ([][]byte, error) {
	if key, indexed, ok := ix.scalarEntryKey(doc); ok {
		if !indexed {
			return nil, nil
		}
		return [][]byte{key}, nil
	}
	return ix.combinedEntryKeys(doc)
}

// scalarEntryKey is entryKeys for its common case, on every write: an
// index of one field, neither hashed nor partial, whose value is a scalar
// at the top level or absent. It makes the key alone, with none of the
// general walk's slices; ok is false for any other index or value.
func (ix *indexState) scalarEntryKey(doc bson.D) (key []byte, indexed, ok bool) {
	return ix.appendScalarEntryKey(nil, doc)
}

// appendScalarEntryKey is scalarEntryKey appending the key to dst, which
// grows (a new array) when its capacity is short.
func (ix *indexState) appendScalarEntryKey(dst []byte, doc bson.D) (key []byte, indexed, ok bool) {
	if len(ix.def.Fields) != 1 || ix.hashed || ix.partial != nil {
		return nil, false, false
	}
	v, missing, ok := bsonutil.TopLevelIndexKey(doc, ix.def.Fields[0].Path)
	switch {
	case !ok:
		return nil, false, false
	case missing && ix.def.Sparse:
		return nil, false, true
	}
	v = ix.keyed(v)
	if dst == nil {
		dst = make([]byte, 0, keySizeHint(v))
	}
	if len(ix.desc) > 0 && ix.desc[0] {
		return keyenc.AppendValueDesc(dst, v), true, true
	}
	return keyenc.AppendValue(dst, v), true, true
}

// keyArena is room in a write's tx for the index keys it computes: a
// touch computes four (two indexes, the old and the new document), each
// otherwise two allocations; and for the storage keys the write builds
// from them (room). Keys are never overwritten: each is cut from the
// arena with no spare capacity, and a key that does not fit is allocated
// as before. The arena lives as long as its tx, so a key the tx keeps
// until commit (tx.written, a sorted deletion) stays valid.
type keyArena struct {
	bytes  [384]byte
	used   int
	lists  [4][]byte
	nlists int
}

// room returns an empty slice with room for n bytes, cut from the arena
// while it has them (else made): what a caller appends up to n stays in
// place, and no later room or key overlaps it.
func (a *keyArena) room(n int) []byte {
	if n > len(a.bytes)-a.used {
		return make([]byte, 0, n)
	}
	b := a.bytes[a.used : a.used : a.used+n]
	a.used += n
	return b
}

// entryKeys is ix.entryKeys of doc, its single scalar key in the arena
// while there is room.
func (a *keyArena) entryKeys(ix *indexState, doc bson.D) ([][]byte, error) {
	free := a.bytes[a.used:a.used:len(a.bytes)]
	key, indexed, ok := ix.appendScalarEntryKey(free, doc)
	switch {
	case !ok:
		return ix.combinedEntryKeys(doc)
	case !indexed:
		return nil, nil
	case len(key) <= cap(free): // appended in place
		a.used += len(key)
		key = key[:len(key):len(key)]
	}
	if a.nlists == len(a.lists) {
		return [][]byte{key}, nil
	}
	list := a.lists[a.nlists : a.nlists+1 : a.nlists+1]
	a.nlists++
	list[0] = key
	return list, nil
}

// keySizeHint is room for v's encoding in most cases: a string's bytes
// and its framing, or a fixed-size value's.
func keySizeHint(v any) int {
	if s, ok := v.(string); ok {
		return len(s) + 8
	}
	return 16
}

// combinedEntryKeys is entryKeys by the general walk: every combination
// of the fields' keys, arrays expanded.
func (ix *indexState) combinedEntryKeys(doc bson.D) ([][]byte, error) {
	vals, indexed, err := ix.keyValues(doc)
	if err != nil || !indexed {
		return nil, err
	}
	desc := ix.desc
	var out [][]byte
	combo := make([]any, len(vals))
	var walk func(i int) error
	walk = func(i int) error {
		if i == len(vals) {
			if len(out) >= maxKeysPerDoc {
				return mongoerr.New(mongoerr.CannotCreateIndex, "too many index keys for one document")
			}
			out = appendUnique(out, keyenc.AppendKey(nil, combo, desc))
			return nil
		}
		for _, v := range vals[i] {
			combo[i] = ix.keyed(v)
			if err := walk(i + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(0)
}

// keyed is v as the index stores it: under the index's collation, its
// strings (inside documents and arrays too) become the collation's keys,
// so that collation-equal strings make one key.
func (ix *indexState) keyed(v any) any {
	if ix.collator == nil {
		return v
	}
	return ix.collator.Value(v)
}

func appendUnique(keys [][]byte, k []byte) [][]byte {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return keys
		}
	}
	return append(keys, k)
}

// keyValueDoc renders the key of doc in ix as {field: value, ...} for
// duplicate-key errors (the first value of each field).
func (ix *indexState) keyValueDoc(doc bson.D) bson.D {
	vals, _, _ := ix.keyValues(doc)
	out := make(bson.D, 0, len(ix.def.Fields))
	for i, f := range ix.def.Fields {
		var v any
		if i < len(vals) && len(vals[i]) > 0 {
			v = vals[i][0]
		}
		out = append(out, bson.E{Key: f.Path, Value: v})
	}
	return out
}

// collationNote is what a duplicate-key message says of the index's
// collation, as mongod's: " collation: {…}", or nothing.
func (ix *indexState) collationNote() string {
	if ix.collator == nil {
		return ""
	}
	return " collation: " + bsonutil.Format(ix.def.Collation)
}

// messageKey is a key as a duplicate-key message shows it: under a
// collation, as mongod, with each string's collation key in hex.
func (ix *indexState) messageKey(kv bson.D) bson.D {
	if ix.collator == nil {
		return kv
	}
	return bsonutil.HexStrings(ix.collator.Doc(kv), "0x", "").(bson.D)
}

// rawKeys computes ix's entry keys straight from a stored document's BSON
// when that is simple: an index without a partial filter on top-level
// fields holding scalars, as most TTL and lookup indexes do. ok is false
// otherwise, and the caller decodes the document. The keys are those
// entryKeys gives for the decoded document.
func (ix *indexState) rawKeys(raw []byte) (keys [][]byte, ok bool, err error) {
	if !ix.simple {
		return nil, false, nil
	}
	combo := make([]any, 0, len(ix.def.Fields))
	allMissing := true
	for _, f := range ix.def.Fields {
		v, found, scalar, err := bsonutil.LookupScalar(raw, f.Path)
		if err != nil || !scalar {
			return nil, false, err
		}
		allMissing = allMissing && !found
		combo = append(combo, v) // missing is indexed as null
	}
	if ix.def.Sparse && allMissing {
		return nil, true, nil
	}
	return [][]byte{keyenc.AppendKey(nil, combo, ix.desc)}, true, nil
}

// keys returns ix's entry keys for a stored document: from its raw BSON
// when it was not decoded and rawKeys can, else from the decoded document.
func (d *stored) keys(ix *indexState) ([][]byte, error) {
	if d.doc == nil {
		if keys, ok, err := ix.rawKeys(d.raw); ok || err != nil {
			return keys, err
		}
		if err := d.decode(); err != nil {
			return nil, err
		}
	}
	return ix.entryKeys(d.doc)
}

// decode decodes the stored version a write reads to change it.
func (d *stored) decode() error {
	doc, err := bsonutil.DecodeShared(d.raw, 0)
	if err != nil {
		return fmt.Errorf("docstore: decode stored document: %w", err)
	}
	d.doc = doc
	return nil
}
