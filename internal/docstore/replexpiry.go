package docstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// Compact expiries (docs/design/0007). On a replica set the primary's
// monitor does not put a deletion's keys in its batch: it hands the batch
// the TTL entry's key alone (storage.ExpiryBatch), and every member, the
// primary included, deletes the document at apply from the deletion
// record that entry holds in its own storage (ApplyExpiries). Members
// hold the same state at the same log position, so they delete the same
// keys; an entry a write replaced first is gone on every member, and so
// is the delete.

// expireCompact hands the TTL entry key (dated d) of the document idEnc to
// a batch that carries expiries in compact form, when rec, its deletion
// record, is current; false leaves the deletion to the caller.
func (t *tx) expireCompact(key, idEnc, rec []byte, d bson.DateTime) bool {
	eb, ok := t.b.(storage.ExpiryBatch)
	if !ok {
		return false
	}
	// Every member writes a compact expiry's event at apply, where no
	// member asks who owns the document: an orphan's silent deletion
	// goes in the batch in full instead (ownership.go). A failed read
	// leaves it to that path too, which reports the error.
	if orphan, err := t.orphanByID(idEnc); err != nil || orphan {
		return false
	}
	keys := 0
	if _, ok := ttlentry.WalkRecord(rec, t.st.indexes[1:], indexID, func(int, []byte) { keys++ }); !ok {
		return false
	}
	eb.AddExpiry(key)
	t.keysRemoved += keys + 1 // and the document's own key
	var id []byte
	t.compactBuf, id = appendCopy(t.compactBuf, idEnc)
	if len(t.compactIDs) == 0 || int64(d) < t.compactLow {
		t.compactLow = int64(d)
	}
	t.compactIDs = append(t.compactIDs, id)
	return true
}

// ApplyExpiries deletes into b the documents whose TTL entries keys name
// (compact expiries, in one entry's order), when the entries are still
// in storage, and returns their change events. publish adds the
// deletions to the collections' counts; the caller runs it once b is in
// storage. Nothing else writes these documents meanwhile: a replica set
// member applies its log on one goroutine, and on the primary a write
// that would change one waits for the batch (inflight.go).
func (s *Store) ApplyExpiries(b storage.Batch, keys [][]byte) (events [][]byte, publish func(), err error) {
	ab := &expiryApply{Batch: b}
	var txs []*tx
	r := &expiryReader{s: s, ab: ab, hint: len(keys)}
	// The applier is the only writer of documents and index entries
	// here, so a run of keys found in storage stays one until b commits;
	// but writes b holds already (the entry's own) are not in storage,
	// and a run could cover one.
	if rd, ok := b.(storage.RunDeleter); ok && b.Len() == 0 {
		r.runs = rd
	}
	defer r.close()
	for _, key := range keys {
		t, err := r.at(key)
		if err != nil {
			return nil, nil, err
		}
		if t == nil {
			continue // the collection is gone: nothing to delete
		}
		if len(txs) == 0 || txs[len(txs)-1] != t {
			txs = append(txs, t)
		}
		if err := t.applyExpiry(key, r.it); err != nil {
			return nil, nil, err
		}
	}
	for _, t := range txs {
		if err := t.applyDeletes(); err != nil {
			return nil, nil, err
		}
	}
	return ab.events, func() {
		for _, t := range txs {
			t.c.count.Add(t.dCount)
			t.c.dataSize.Add(t.dSize)
		}
	}, nil
}

// expiryReader follows the collection of the keys ApplyExpiries goes
// through, with one iterator over its documents and index entries: the
// keys come in index order, so each seek moves forward from the last,
// where a point lookup per key would start from the top of every level;
// and the runs the collection's deletions make are found with it too.
// Each iterator an engine opens after a range deletion reads every range
// deletion of its memtable again, so the apply opens one per collection.
type expiryReader struct {
	s      *Store
	ab     *expiryApply
	hint   int
	runs   storage.RunDeleter // for range deletions of runs; nil: none
	prefix []byte             // the index key prefix of the current collection
	t      *tx
	it     storage.Iterator   // the current collection's
	opened []storage.Iterator // every collection's, open until the deletions are in
}

// at returns the deletions of the collection key belongs to (nil when it
// is gone), with r.it over that collection's documents and index entries.
func (r *expiryReader) at(key []byte) (*tx, error) {
	if r.prefix != nil && bytes.HasPrefix(key, r.prefix) {
		return r.t, nil
	}
	collID, ok := indexKeyCollection(key)
	if !ok {
		return nil, fmt.Errorf("docstore: apply expiry: bad key %x", key)
	}
	r.prefix, r.t, r.it = collIndexPrefix(collID), nil, nil
	c := r.s.collectionByID(collID)
	if c == nil {
		return nil, nil
	}
	it, err := r.s.eng.NewIter(docPrefix(collID), prefixEnd(r.prefix))
	if err != nil {
		return nil, fmt.Errorf("docstore: apply expiry: %w", err)
	}
	r.it, r.opened = it, append(r.opened, it)
	// The primary took only owned documents as compact expiries
	// (expireCompact): the apply asks no member's ownership, so that
	// every member writes the same events.
	r.t = &tx{c: c, st: c.state.Load(), b: r.ab, r: r.s.eng, sortDeletes: true, deleteHint: r.hint, ownsLooked: true}
	if r.runs != nil {
		r.t.runs = &runDeletion{b: r.runs, it: it, chained: make([]int, 1+len(r.t.st.indexes))}
	}
	return r.t, nil
}

func (r *expiryReader) close() {
	for _, it := range r.opened {
		it.Close()
	}
	r.opened, r.it = nil, nil
}

// indexKeyCollection returns the collection ID an index key starts with.
func indexKeyCollection(key []byte) (uint64, bool) {
	if len(key) < 13 || key[0] != tagIndex {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1:9]), true
}

// applyExpiry deletes the document whose TTL entry is key, if the entry
// is still there, by its deletion record or else by reading it.
func (t *tx) applyExpiry(key []byte, it storage.Iterator) error {
	ix := t.st.ttlIndexOfKey(key)
	if ix == nil {
		return nil // the index is gone, and with it the entry
	}
	link := t.chainLink(ix, it)
	found, stepped := seekForward(it, key)
	if !found {
		if err := it.Error(); err != nil {
			return fmt.Errorf("docstore: apply expiry: %w", err)
		}
		return nil // a write replaced the entry first
	}
	id, rec, _ := ttlentry.Split(it.Key(), it.Value())
	id = bytes.Clone(id) // the deletions below outlive the iterator's position
	d, dated := ix.entryDate(key)
	if rec != nil {
		var at int64 // the primary judged it expired; this member's cache checks its own clock
		if dated {
			at = ix.expiry(d).UnixNano()
		}
		done, err := t.removeByRecord(id, rec, ix, at)
		if err != nil || done {
			if err == nil {
				link.found(t, stepped, key)
				err = t.emitExpiryByID(id, ix, d)
			}
			return err
		}
	}
	old, err := t.c.loadLocked(id)
	if err != nil || old == nil {
		return err
	}
	return t.expireRead(ix, old)
}

// chainLink is where an apply's TTL entry would join its deletion group:
// the group, its length, and whether the iterator stands on its last key.
type chainLink struct {
	group, before int
	atLast        bool
}

// chainLink is the link for the entry of ix it is about to seek, when
// the apply deletes runs (runDeletion.chained).
func (t *tx) chainLink(ix *indexState, it storage.Iterator) chainLink {
	if t.runs == nil {
		return chainLink{group: -1}
	}
	i := slices.Index(t.st.indexes, ix)
	if i < 0 {
		return chainLink{group: -1}
	}
	l := chainLink{group: 1 + i}
	if t.deletes != nil {
		l.before = len(t.deletes[l.group])
	}
	l.atLast = l.before > 0 && it.Valid() && bytes.Equal(it.Key(), t.deletes[l.group][l.before-1].key)
	return l
}

// found notes that the entry key, reached in one step of the iterator
// (stepped) or not, joined the link's group.
func (l chainLink) found(t *tx, stepped bool, key []byte) {
	if l.group > 0 {
		t.runs.noteFound(l.group, l.before, l.atLast && stepped, t.deletes[l.group], key)
	}
}

// seekForward positions it at key and reports whether key is there, and
// whether one step forward from where it stood found it. An entry's keys
// come in index order, each most often the entry right after the one
// before (a pass takes every expired entry it walks), so one step
// forward usually finds it, where a seek would go down every level of
// the engine again.
func seekForward(it storage.Iterator, key []byte) (found, stepped bool) {
	if it.Valid() && bytes.Compare(it.Key(), key) < 0 && it.Next() {
		switch c := bytes.Compare(it.Key(), key); {
		case c == 0:
			return true, true
		case c > 0:
			return false, false // nothing between the last key and this one
		}
	}
	return it.SeekGE(key) && bytes.Equal(it.Key(), key), false
}

// ttlIndexOfKey is the TTL index an index key belongs to.
func (st *collState) ttlIndexOfKey(key []byte) *indexState {
	for _, ix := range st.ttl {
		if bytes.HasPrefix(key, ix.prefix) {
			return ix
		}
	}
	return nil
}

// expiryApply is the batch ApplyExpiries deletes into: it gathers the
// change events, which the caller writes under the entry's stamp.
type expiryApply struct {
	storage.Batch
	events [][]byte
}

var _ changestream.EventBatch = (*expiryApply)(nil)

func (a *expiryApply) AddEvent(ev []byte) { a.events = append(a.events, ev) }

func (a *expiryApply) RecordsEvents() bool { return true }

// commitCompact proposes a batch that holds compact expiries alone and
// returns the wait for its apply; the counts change at apply
// (ApplyExpiries), so the batch notes none.
func (t *tx) commitCompact() (wait func() error, err error) {
	defer t.b.Close()
	if n, ok := t.b.(storage.CountNoter); ok {
		n.NoteCounts(t.st.meta.ID, 0, 0)
	}
	return t.b.(storage.ExpiryBatch).CommitAsync()
}

// onlyCompact reports whether every document the batch deleted went as
// a compact expiry: then nothing in it depends on the locks it holds.
func (t *tx) onlyCompact(res ExpireResult) bool {
	_, ok := t.b.(storage.ExpiryBatch)
	return ok && res.Deleted > 0 && len(t.compactIDs) == res.Deleted && res.StaleEntries == 0
}
