package docstore

import (
	"bytes"
	"sync"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
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
// index), starting at its mark, and evicts documents until the limits
// hold.
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
	var kept []byte           // the first entry the walk leaves
	ok := ix.lruMark.start(it, desc)
	for ; ok && t.overLRU(ix); ok = step(it, desc) {
		// A touch's stale entry, left from before the index had its
		// limit, does not date its document (ttlloose.go).
		if stale, err := t.c.skipLoose(ix, it.Key(), it.Value(), t.r); err != nil || stale {
			if err != nil {
				return err
			}
			continue
		}
		id := ttlentry.ID(it.Key(), it.Value())
		if bytes.Equal(id, keep) || seen[string(id)] {
			if kept == nil {
				kept = append([]byte(nil), it.Key()...)
			}
			continue
		}
		seen[string(id)] = true
		if err := t.evict(ix, append([]byte(nil), id...)); err != nil {
			return err
		}
	}
	if kept == nil && ok {
		kept = append([]byte(nil), it.Key()...)
	}
	if err := it.Error(); err != nil {
		return err
	}
	if added := t.lruAdded[ix.def.ID]; added != nil && kept != nil && beyond(kept, added, desc) {
		// The walk cannot see this batch's own entries: the mark must
		// not pass them.
		kept = added
	}
	ix.lruMark.raise(kept, ok || kept != nil, desc)
	return nil
}

// beyond reports whether key a lies past b in the walk's direction.
func beyond(a, b []byte, desc bool) bool {
	if desc {
		return bytes.Compare(a, b) < 0
	}
	return bytes.Compare(a, b) > 0
}

// noteLRUEntry records a new entry of an lruLimit index: the mark moves
// over it now, and the batch remembers its lowest for the walk's end.
func (t *tx) noteLRUEntry(ix *indexState, key []byte) {
	ix.lruMark.lower(ix, key)
	if t.lruAdded == nil {
		t.lruAdded = map[uint32][]byte{}
	}
	if prev := t.lruAdded[ix.def.ID]; prev == nil || beyond(prev, key, ix.desc[0]) {
		t.lruAdded[ix.def.ID] = key
	}
}

func step(it storage.Iterator, desc bool) bool {
	if desc {
		return it.Prev()
	}
	return it.Next()
}

// lruMark saves each eviction from stepping over the deletion tombstones
// of the evictions before it (as the TTL progress mark does, 0003): below
// from (above it, in a descending index, where from is an exclusive upper
// bound) every entry was evicted. Writes to the collection hold the
// unique-key lock, so marks move one write at a time; the mutex only
// makes that explicit. A write that adds an entry beyond the mark moves
// the mark over it before its eviction walks.
type lruMark struct {
	mu   sync.Mutex
	from []byte // nil: the index's end
}

func (m *lruMark) start(it storage.Iterator, desc bool) bool {
	m.mu.Lock()
	from := m.from
	m.mu.Unlock()
	switch {
	case from == nil && desc:
		return it.Last()
	case from == nil:
		return it.First()
	case desc:
		return it.SeekLT(from)
	}
	return it.SeekGE(from)
}

// raise moves the mark to kept, the first entry the walk left; with
// none (found false) the walk evicted everything it met, and the mark
// stays.
func (m *lruMark) raise(kept []byte, found, desc bool) {
	if !found || kept == nil {
		return
	}
	if desc {
		kept = append(kept, 0) // exclusive: SeekLT lands on kept
	}
	m.mu.Lock()
	m.from = kept
	m.mu.Unlock()
}

// lower moves the mark of ix over a new entry key.
func (m *lruMark) lower(ix *indexState, key []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.from == nil {
		return
	}
	if ix.desc[0] {
		if bytes.Compare(key, m.from) >= 0 {
			m.from = append(append([]byte(nil), key...), 0)
		}
	} else if bytes.Compare(key, m.from) < 0 {
		m.from = append([]byte(nil), key...)
	}
}

// evict deletes the document id as ix's limit demands, with a delete
// event marked evicted; one that had expired already goes as an expiry.
func (t *tx) evict(ix *indexState, id []byte) error {
	if t.locks != nil && !t.locks.tryStripe(t.c.stripeOf(id)) {
		return errRetry
	}
	old, err := t.c.loadForWrite(id)
	if err != nil || old == nil {
		return err
	}
	if t.c.expiredNow(old.doc) {
		return t.expireDoc(old)
	}
	if err := t.removeLive(old); err != nil {
		return err
	}
	t.evicted++
	t.emitEviction(old, ix)
	return nil
}

func (t *tx) emitEviction(old *stored, ix *indexState) {
	if t.eventBatch() == nil || t.orphan(old.raw) {
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

// EvictToLRULimits evicts, in one atomic write, what the collection holds
// beyond its lruLimit indexes' limits: collMod lowering a limit makes it
// hold at once, not at the next write. Like a write, it holds the
// unique-key lock; a victim whose stripe a client holds makes it start
// over.
func (c *Collection) EvictToLRULimits() error {
	return retrying(c.evictToLimitsOnce,
		"write conflict: another write holds a document the eviction must remove")
}

func (c *Collection) evictToLimitsOnce() error {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	if c.dropped.Load() || len(c.state.Load().lru) == 0 {
		return nil
	}
	l := &lockSet{c: c}
	defer l.release()
	l.lockUnique()
	t := c.newTx(l)
	if err := t.evictForLRU(nil); err != nil || t.dCount == 0 {
		t.abort()
		return err
	}
	return t.commit(WriteOptions{})
}
