package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

// ScanKeyRange starts an iterator over the live documents whose key in an
// index that starts with key is at or above from and below to, the bounds
// holding values of key's fields in order: a chunk's bounds (a shard key),
// MinKey and MaxKey allowed, a hashed field's bound its hash. It reads the
// range's entries and their documents, not the collection. ok is false
// when no such index can answer so (one that is not ready, sparse,
// partial, keyed by a collation, or descending or multikey on a bounded
// field cannot; nor can the _id index, which has no entries of its own):
// the caller then scans the collection.
func (c *Collection) ScanKeyRange(key bson.D, from, to []any) (it *DocIter, ok bool) {
	for _, ix := range c.state.Load().indexes {
		if !startsWith(ix.def.KeyPattern(), key) || !rangeScannable(ix, max(len(from), len(to), len(key))) {
			continue
		}
		lo := keyenc.AppendKey(append([]byte(nil), ix.prefix...), from, nil)
		hi := keyenc.AppendKey(append([]byte(nil), ix.prefix...), to, nil)
		plan := &Plan{Kind: IndexScan, Index: ix.def, ranges: []keyRange{{lo: lo, hi: hi}}}
		return c.Scan(plan, nil), true
	}
	return nil, false
}

// startsWith reports whether pattern's first fields are key's, with the
// same directions or kinds.
func startsWith(pattern, key bson.D) bool {
	if len(key) == 0 || len(pattern) < len(key) {
		return false
	}
	for i, e := range key {
		if pattern[i].Key != e.Key || bsonutil.Compare(pattern[i].Value, e.Value) != 0 {
			return false
		}
	}
	return true
}

// rangeScannable reports whether ix holds one entry per document for
// each of its first n fields' values, in ascending order.
func rangeScannable(ix *indexState, n int) bool {
	d := ix.def
	if d.IsID() || !d.Ready || d.Sparse || ix.partial != nil || ix.collator != nil || n > len(d.Fields) {
		return false
	}
	for i := range n {
		if ix.desc[i] || d.FieldMultiKey(i) {
			return false
		}
	}
	return true
}
