package docstore

import (
	"bytes"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
)

// LRU-bounded collections. An index with lruLimit {documents, bytes}
// bounds the collection: a write that would leave it over either limit
// evicts, in the same atomic batch, the documents with the lowest values
// of the index's field (index order: missing and null first, then by
// MongoDB's order of values), never the document being written. Writes to
// such a collection take the unique-key lock, as capped writes do, so the
// counts each write checks are exact: nothing else adds documents or
// bytes between its check and its commit.

// evictForLRU removes the lowest entries of each lruLimit index until the
// collection, with the pending batch applied, fits its limits. keep is
// the document just written.
func (t *tx) evictForLRU(keep []byte) error {
	for _, ix := range t.st.lru {
		if err := t.evictLowest(ix, keep); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) overLRU(ix *indexState) bool {
	n, size := t.c.count.Load()+t.dCount, t.c.dataSize.Load()+t.dSize
	return (ix.def.LRUDocs > 0 && n > ix.def.LRUDocs) || (ix.def.LRUBytes > 0 && size > ix.def.LRUBytes)
}

// evictLowest walks ix from its lowest value (the end of a descending
// index) and evicts documents until the limits hold.
func (t *tx) evictLowest(ix *indexState, keep []byte) error {
	if !t.overLRU(ix) {
		return nil
	}
	it, err := t.c.store.eng.NewIter(ix.prefix, prefixEnd(ix.prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	desc := ix.desc[0]
	seen := map[string]bool{} // a multikey document has several entries
	ok := it.First()
	if desc {
		ok = it.Last()
	}
	for ; ok && t.overLRU(ix); ok = step(it, desc) {
		id := entryID(it.Value())
		if bytes.Equal(id, keep) || seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		if err := t.evict(ix, append([]byte(nil), id...)); err != nil {
			return err
		}
	}
	return it.Error()
}

func step(it storage.Iterator, desc bool) bool {
	if desc {
		return it.Prev()
	}
	return it.Next()
}

// evict deletes the document id as ix's limit demands, with a delete
// event marked evicted; one that had expired already goes as an expiry.
func (t *tx) evict(ix *indexState, id []byte) error {
	if t.locks != nil && !t.locks.tryStripe(t.c.stripeOf(id)) {
		return errRetry
	}
	old, err := t.c.loadLocked(id)
	if err != nil || old == nil {
		return err
	}
	if t.c.expiredNow(old.doc) {
		return t.expireDoc(old)
	}
	if err := t.removeDoc(old); err != nil {
		return err
	}
	t.evicted++
	t.emitEviction(old, ix)
	return nil
}

func (t *tx) emitEviction(old *stored, ix *indexState) {
	if t.eventBatch() == nil {
		return
	}
	ev := changestream.Event{Op: changestream.OpDelete, Evicted: &changestream.Eviction{Index: ix.def.Name}}
	if ev.RawID = rawID(old.raw); ev.RawID == nil {
		ev.ID = old.idEnc
	}
	if t.preImages() {
		ev.Pre = old.raw
	}
	t.emit(&ev)
}

// LRUEvicted counts the documents lruLimit indexes evicted
// (serverStatus metrics.lru.evictedDocuments).
func (s *Store) LRUEvicted() int64 { return s.evictions.Load() }
