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

// A touch's entry as its log (docs/design/0002, "The TTL entry as the
// touch's log"). When the engine holds touches back (storage.TouchSetter)
// and an update changes nothing of a document but the top-level date of
// an appending TTL index, moving it later, the loose entry the touch
// appends (updateAppending) records the new date, marked
// ttlentry.RecordTagLooseLog, and the document goes to the engine by
// SetTouch: held back with no record of its own.
//
// After a crash storage may hold such a document at an older date. Its
// newest entry in the index is then the touch's, because every write of
// a document either appends a later entry or deletes the entries it
// knows of and writes its own (updateAppending, deleteStale).
// repairTouches, which the engine runs at open before anything reads,
// sets the date of each document whose newest entry logs a touch later
// than the document's date to that entry's date.

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

// removeLogged deletes, with a document of ix whose entries are keys,
// the stale entries its entry lists when touches are held back: an
// entry logging a touch must not outlive its document, or the repair
// would take it for the touch of a document written again under the
// same _id with an earlier date.
func (t *tx) removeLogged(ix *indexState, keys [][]byte, idEnc []byte) error {
	if !ix.appends || len(keys) != 1 {
		return nil
	}
	if ts, ok := t.b.(storage.TouchSetter); !ok || !ts.TouchesBehind() {
		return nil
	}
	entry := t.entryKey(ix, keys[0], idEnc)
	value, err := t.getSmall(entry)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("docstore: read the TTL entry of a deletion: %w", err)
	}
	_, stale, _ := ttlentry.SplitLoose(entry, value)
	return t.deleteStale(ix, idEnc, stale)
}

// repairTouches is the store's storage.TouchRepair.
func (s *Store) repairTouches(r storage.Reader, set func(key, value []byte) error) error {
	byID := s.byID.Load()
	if byID == nil {
		return nil
	}
	var indexes []touchrepair.Index
	for _, c := range *byID {
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
