package docstore

import (
	"fmt"

	"github.com/mayflydb/mayfly/internal/storage"
)

// IndexSizes returns, by index name, the bytes its entries take in
// storage (keys and values, before compression), counted by a scan of the
// index's key range. The _id index is the documents' keys.
func (c *Collection) IndexSizes() (map[string]int64, error) {
	st := c.state.Load()
	out := make(map[string]int64, len(st.indexes)+1)
	for _, ix := range st.indexes {
		if ix.def.IsID() {
			continue
		}
		n, err := c.rangeBytes(ix.prefix, prefixEnd(ix.prefix), true)
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
		return 0, fmt.Errorf("docstore: index size of %s: %w", c.Namespace(), err)
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

// StorageSize is the storage engine's estimate of the bytes its files on
// disk hold for the collection's documents; 0 where the engine cannot say
// (in memory) or has not flushed them yet.
func (c *Collection) StorageSize() int64 {
	est, ok := c.store.eng.(storage.SizeEstimator)
	if !ok {
		return 0
	}
	p := docPrefix(c.meta().ID)
	n, err := est.EstimateDiskUsage(p, prefixEnd(p))
	if err != nil {
		return 0
	}
	return int64(n)
}
