package docstore

import (
	"fmt"

	"github.com/mayflydb/mayfly/internal/storage"
)

// IndexSizes returns, by index name, the bytes its entries take in
// storage (rangeSize of the index's key range). The _id index is the
// documents' keys, counted by a scan: the engine's estimate cannot part
// them from the documents.
func (c *Collection) IndexSizes() (map[string]int64, error) {
	st := c.state.Load()
	out := make(map[string]int64, len(st.indexes)+1)
	for _, ix := range st.indexes {
		if ix.def.IsID() {
			continue
		}
		n, err := c.rangeSize(ix.prefix, prefixEnd(ix.prefix))
		if err != nil {
			return nil, err
		}
		out[ix.def.Name] = n
	}
	p := docPrefix(st.meta.ID)
	n, err := c.rangeBytes(p, prefixEnd(p), false)
	if err != nil {
		return nil, err
	}
	for _, def := range st.meta.Indexes {
		if def.IsID() {
			out[def.Name] = n
		}
	}
	return out, nil
}

func (c *Collection) rangeBytes(lo, hi []byte, withValues bool) (int64, error) {
	it, err := c.store.eng.NewIter(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("docstore: bytes stored for %s: %w", c.Namespace(), err)
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n += int64(len(it.Key()))
		if withValues {
			n += int64(len(it.Value()))
		}
	}
	return n, it.Error()
}

// StorageSize is the bytes storage holds for the collection's documents
// (rangeSize of their key range).
func (c *Collection) StorageSize() (int64, error) {
	p := docPrefix(c.meta().ID)
	return c.rangeSize(p, prefixEnd(p))
}

// rangeSize is the storage engine's estimate of the bytes its files hold
// for the key range, as mongod reports its engine's sizes. Where the
// engine has no estimate (in memory, or data not yet flushed from its
// memtable) it is the range's bytes as stored, keys and values before
// compression, so that a range holding data never reports 0.
func (c *Collection) rangeSize(lo, hi []byte) (int64, error) {
	if est, ok := c.store.eng.(storage.SizeEstimator); ok {
		n, err := est.EstimateDiskUsage(lo, hi)
		if err != nil {
			return 0, fmt.Errorf("docstore: size estimate of %s: %w", c.Namespace(), err)
		}
		if n > 0 {
			return int64(n), nil
		}
	}
	return c.rangeBytes(lo, hi, true)
}
