package docstore

import "github.com/mayflydb/mayfly/internal/keyenc"

// ScanKeyRange starts an iterator over the live documents whose entry in
// the index named ixName is at or above min and below max, the bounds
// holding values of the index's leading fields in order: a chunk's
// bounds, MinKey and MaxKey allowed, a hashed field's bound its hash. It
// reads the range's entries and their documents, not the collection.
// ok is false when the index cannot answer so (it is missing, not ready,
// sparse, partial, keyed by a collation, or descending or multikey on a
// bounded field, or the _id index, which has no entries of its own); the
// caller then scans the collection.
func (c *Collection) ScanKeyRange(ixName string, min, max []any) (it *DocIter, ok bool) {
	st := c.state.Load()
	var ix *indexState
	for _, x := range st.indexes {
		if x.def.Name == ixName {
			ix = x
		}
	}
	if ix == nil || !rangeScannable(ix, len(min), len(max)) {
		return nil, false
	}
	lo := keyenc.AppendKey(append([]byte(nil), ix.prefix...), min, nil)
	hi := keyenc.AppendKey(append([]byte(nil), ix.prefix...), max, nil)
	plan := &Plan{Kind: IndexScan, Index: ix.def, ranges: []keyRange{{lo: lo, hi: hi}}}
	return c.Scan(plan, nil), true
}

// rangeScannable reports whether ix holds one entry per document for
// each of its first n fields' values, in ascending order.
func rangeScannable(ix *indexState, nMin, nMax int) bool {
	d := ix.def
	n := max(nMin, nMax)
	if d.Name == "_id_" || !d.Ready || d.Sparse || ix.partial != nil || ix.collator != nil || n == 0 || n > len(d.Fields) {
		return false
	}
	for i := range n {
		if ix.desc[i] || d.FieldMultiKey(i) {
			return false
		}
	}
	return true
}
