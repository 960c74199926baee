package docstore

import (
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/touchrepair"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// A touch's entry as its log (docs/design/0002): when the engine holds
// touches back (storage.TouchSetter) and an update only moves the
// top-level date of an appending TTL index later, the loose entry it
// appends is marked ttlentry.RecordTagLooseLog and the document goes by
// SetTouch, held back with no record of its own. After a crash,
// internal/touchrepair restores the date from the document's newest
// entry, which is its current date's (updateAppending, deleteStale,
// removeLive keep that so).

// touchLogIndex returns the appending index whose date alone changes
// from old to d, when t's batch holds touches back: nil for any other
// write.
func (t *tx) touchLogIndex(d, old *stored) *indexState {
	if old == nil || len(old.raw) != len(d.raw) {
		return nil
	}
	if ts, ok := t.b.(storage.TouchSetter); !ok || !ts.TouchesBehind() {
		return nil
	}
	lo, hi := rescache.DiffSpan(old.raw, d.raw)
	name, ok := bsonutil.ChangedDate(d.raw, lo, hi)
	if !ok {
		return nil
	}
	for _, ix := range t.st.indexes[1:] {
		if ix.appends && ix.def.Fields[0].Path == string(name) {
			return ix
		}
	}
	return nil
}

// setTouched writes d, held back when ix took its entry as d's log.
func (t *tx) setTouched(key []byte, d *stored) error {
	if t.touchLogged {
		t.touchLogged = false
		return t.b.(storage.TouchSetter).SetTouch(key, d.raw)
	}
	return t.b.Set(key, d.raw)
}

// removeLive is removeDoc for a document the monitor did not find
// expired: with the stale entries its appending indexes' entries list,
// when touches are held back. An entry logging a touch must not outlive
// its document, or the repair would take it for a touch of a document
// written again under the same _id with an earlier date. (A document
// the monitor expires has only stale entries already due: one written
// again before such a date expired when written.)
func (t *tx) removeLive(old *stored) error {
	if ts, ok := t.b.(storage.TouchSetter); ok && ts.TouchesBehind() {
		for _, ix := range t.st.indexes[1:] {
			if err := t.removeLogged(ix, old); err != nil {
				return err
			}
		}
	}
	return t.removeDoc(old)
}

// removeLogged deletes the stale entries old's entry in ix lists.
func (t *tx) removeLogged(ix *indexState, old *stored) error {
	if !ix.appends {
		return nil
	}
	keys, err := t.storedKeys(ix, old)
	if err != nil || len(keys) != 1 {
		return err
	}
	entry := t.entryKey(ix, keys[0], old.idEnc)
	value, err := t.getSmall(entry)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("docstore: read the TTL entry of a deletion: %w", err)
	}
	_, stale, _ := ttlentry.SplitLoose(entry, value)
	return t.deleteStale(ix, old.idEnc, stale)
}

// repairTouches is the store's storage.TouchRepair.
func (s *Store) repairTouches(r storage.Reader, set func(key, value []byte) error) error {
	var indexes []touchrepair.Index
	for _, c := range *s.byID.Load() { // published by Open before the engine runs this
		st := c.state.Load()
		for _, ix := range st.indexes {
			if ix.appends {
				indexes = append(indexes, touchrepair.Index{
					Prefix: ix.prefix, End: prefixEnd(ix.prefix), Field: ix.def.Fields[0].Path, Desc: ix.def.Fields[0].Desc,
					Date:   func(key []byte) (int64, bool) { d, ok := ix.entryDate(key); return int64(d), ok },
					DocKey: func(id []byte) []byte { return docKey(st.meta.ID, id) },
				})
			}
		}
	}
	if err := touchrepair.Run(r, indexes, set); err != nil {
		return fmt.Errorf("docstore: restore touches held back: %w", err)
	}
	return nil
}
