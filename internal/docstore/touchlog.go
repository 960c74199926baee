package docstore

import (
	"fmt"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/touchrepair"
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

// removeLive is removeDoc for a document the monitor did not expire,
// with the stale entries its entries list while touches are held back:
// a logging entry outliving its document would be taken for a touch of
// one written again under its _id (0002, "Why the repair is exact").
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
	stale, _, err := t.listedStale(t.entryKey(ix, keys[0], old.idEnc))
	if err != nil {
		return err
	}
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
