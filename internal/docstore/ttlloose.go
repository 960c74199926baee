package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// maxStaleEntries bounds the stale entries a touched document keeps in an
// appending index before a touch deletes the oldest: a session touched
// at most this often per lifetime costs one index write per touch, as
// does a refreshOnRead index, which writes at most once per tenth of it.
const maxStaleEntries = 10

// appendsEntries reports whether touches append to ix: a ready TTL index
// on one top-level field, without a partial filter, collation, hash,
// uniqueness (a stale entry would hold a key another document may take),
// lruLimit (whose walk takes the lowest entry as the least recently used)
// or expireElements.
func appendsEntries(ix *indexState) bool {
	def := ix.def
	return def.TTL && def.Ready && len(def.Fields) == 1 && ix.simple && !ix.hashed &&
		!def.RefusesDuplicates() && !def.HasLRU() && !def.ExpireElements
}

// updateAppending handles a write of d in ix, an appending index, whose
// old version had the one entry oldKeys there. When d has one entry and
// its date is later, it writes that entry loose, leaves the old one if it
// was loose (deleting it otherwise: a record entry is trusted by the
// monitor), and reports true. Any other change deletes the stale entries
// the old entry lists, and updateIndex goes on as for any index.
func (t *tx) updateAppending(ix *indexState, oldKeys, newKeys [][]byte, d *stored) (bool, error) {
	if len(oldKeys) != 1 {
		return false, nil
	}
	oldEntry := t.entryKey(ix, oldKeys[0], d.idEnc)
	stale, loose, err := t.listedStale(oldEntry)
	if err != nil {
		return false, err
	}
	oldDate, ok := ix.keyDate(oldKeys[0])
	if !ok || len(newKeys) != 1 || !laterDate(ix, newKeys[0], oldDate) {
		return false, t.deleteStale(ix, d.idEnc, stale)
	}
	if loose {
		stale = append(stale, int64(oldDate))
	} else if err := t.b.Delete(oldEntry); err != nil {
		return false, err
	}
	if stale, err = t.capStale(ix, d.idEnc, stale); err != nil {
		return false, err
	}
	t.noteTTLEntry(ix, newKeys[0])
	// The entry's key and value share one room in t's arena (one
	// allocation when it is full): a touch is the hot write, and neither
	// is changed once set.
	n := entryKeySize(ix, newKeys[0], d.idEnc)
	buf := appendEntryKey(t.keys.room(n+ttlentry.LooseSize(stale)), ix, newKeys[0], d.idEnc)
	logs := ix == t.touchLog // the entry is the document's log
	t.touchLogged = t.touchLogged || logs
	return true, t.b.Set(buf[:n:n], ttlentry.AppendLoose(buf[n:], d.idEnc, stale, logs))
}

// listedStale returns the stale dates the entry at key lists, and
// whether it is loose (none for an entry of another kind, or none).
func (t *tx) listedStale(key []byte) (stale []int64, loose bool, err error) {
	value, err := t.getSmall(key)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, false, fmt.Errorf("docstore: read a TTL entry: %w", err)
	}
	_, stale, loose = ttlentry.SplitLoose(key, value)
	return stale, loose, nil
}

// getSmall is t.r.Get of a value expected small (a loose TTL entry's), in
// room of t's key arena when the reader can append (storage.AppendGetter).
func (t *tx) getSmall(key []byte) ([]byte, error) {
	ag, ok := t.r.(storage.AppendGetter)
	if !ok {
		return t.r.Get(key)
	}
	v, err := ag.AppendGet(t.keys.room(smallValueRoom), key)
	return v[:len(v):len(v)], err
}

// smallValueRoom is the room getSmall gives a value: a loose entry's _id
// and its stale dates, up to maxStaleEntries of them.
const smallValueRoom = 96

// laterDate reports whether key holds a date after old.
func laterDate(ix *indexState, key []byte, old bson.DateTime) bool {
	d, ok := ix.keyDate(key)
	return ok && d > old
}

// capStale drops from stale the dates already due (the monitor removes
// those entries) and deletes the newest entries beyond maxStaleEntries:
// the one the touch would leave, dated just before its own. Deleting the
// oldest instead scattered a tombstone per touch over the whole index,
// every date a session had held, so each compaction of the index's newest
// entries rewrote all of it; the newest sits beside the entry the touch
// writes. The oldest fall due first, and the monitor removes them.
func (t *tx) capStale(ix *indexState, idEnc []byte, stale []int64) ([]int64, error) {
	cutoff := t.c.store.clock.Now().Add(-time.Duration(ix.def.ExpireAfter) * time.Second).UnixMilli()
	stale = slices.DeleteFunc(stale, func(d int64) bool { return d <= cutoff })
	for n := len(stale); n > maxStaleEntries; n-- {
		if err := t.b.Delete(staleEntryKey(ix, stale[n-1], idEnc)); err != nil {
			return nil, err
		}
		stale = stale[:n-1]
	}
	return stale, nil
}

// deleteStale deletes the stale entries of idEnc at the given dates.
func (t *tx) deleteStale(ix *indexState, idEnc []byte, stale []int64) error {
	for _, d := range stale {
		if err := t.b.Delete(staleEntryKey(ix, d, idEnc)); err != nil {
			return err
		}
	}
	return nil
}

func staleEntryKey(ix *indexState, date int64, idEnc []byte) []byte {
	return entryKey(ix, keyenc.AppendKey(nil, []any{bson.DateTime(date)}, ix.desc), idEnc)
}

// holdsEntry reports whether the entry key of ix, whose document idEnc is
// raw (nil: gone), is one of the document's entries there now: always so
// for an entry with a record or a bare _id, not always for a loose one.
func (ix *indexState) holdsEntry(key, idEnc, raw []byte) (bool, error) {
	if raw == nil || len(key) < len(ix.prefix)+len(idEnc) {
		return false, nil
	}
	keys, err := (&stored{idEnc: idEnc, raw: raw}).keys(ix)
	if err != nil {
		return false, err
	}
	return containsKey(keys, key[len(ix.prefix):len(key)-len(idEnc)]), nil
}

// looseVisits are the loose entries a monitor's batch took: each judged
// against its document once the walk is over (removeLoose).
type looseVisits struct {
	keys, ids [][]byte
	buf       []byte // one buffer for the copies
}

func (v *looseVisits) add(key, id []byte) {
	var k, i []byte
	v.buf, k = appendCopy(v.buf, key)
	v.buf, i = appendCopy(v.buf, id)
	v.keys, v.ids = append(v.keys, k), append(v.ids, i)
}

// byDocument returns the visits' distinct _ids, sorted, and each one's
// entry keys.
func (v *looseVisits) byDocument() (ids [][]byte, keys map[string][][]byte) {
	keys = map[string][][]byte{}
	for i, id := range v.ids {
		if _, ok := keys[string(id)]; !ok {
			ids = append(ids, id)
		}
		keys[string(id)] = append(keys[string(id)], v.keys[i])
	}
	slices.SortFunc(ids, bytes.Compare)
	return ids, keys
}

// removeLoose judges the loose entries a batch took (their documents'
// stripes held): a document whose entry is still its own has expired by
// this index, and goes as removeRead deletes one; every other entry —
// stale, or of a document gone — is deleted alone, with no event.
func (c *Collection) removeLoose(t *tx, ix *indexState, v *looseVisits, now time.Time, res *ExpireResult, left *int64) error {
	if len(v.ids) == 0 {
		return nil
	}
	ids, keys := v.byDocument()
	docs, err := c.loadMany(ids)
	if err != nil {
		return err
	}
	found := make(map[string]*stored, len(docs))
	for _, d := range docs {
		found[string(d.idEnc)] = d
	}
	for _, id := range ids {
		if err := t.judgeLoose(ix, id, found[string(id)], keys[string(id)], now, res, left); err != nil {
			return err
		}
	}
	return nil
}

// judgeLoose deletes the stale entries among keys, the loose entries of
// the document id (d, nil when gone), and the document when one of them
// is its own and it has expired.
func (t *tx) judgeLoose(ix *indexState, id []byte, d *stored, keys [][]byte, now time.Time, res *ExpireResult, left *int64) error {
	group := 1 + slices.Index(t.st.indexes, ix)
	var current [][]byte // the document's keys in ix now
	if d != nil {
		var err error
		if current, err = d.keys(ix); err != nil {
			return err
		}
	}
	var own []byte
	for _, k := range keys {
		if len(k) < len(ix.prefix)+len(id) {
			continue // a malformed value, which validate reports
		}
		if containsKey(current, k[len(ix.prefix):len(k)-len(id)]) {
			own = k
			continue
		}
		if err := t.del(group, k); err != nil {
			return err
		}
		res.StaleEntries++
	}
	if own == nil {
		return nil
	}
	return t.expireLooseOwner(ix, d, own, len(current) == 1, now, res, left)
}

// expireLooseOwner deletes d, whose own loose entry own the batch found
// due, as removeRead does: after checking it has expired. When own is
// the document's only entry in ix, its date is the document's expiry
// there, and the document need not be decoded for its event.
func (t *tx) expireLooseOwner(ix *indexState, d *stored, own []byte, only bool, now time.Time, res *ExpireResult, left *int64) error {
	expired, err := t.c.storedExpired(d, now)
	if err != nil {
		return err
	}
	if !expired {
		*left = math.MinInt64 // the index and the document disagree: start over
		return nil
	}
	date, dated := ix.entryDate(own)
	switch {
	case only && dated:
		err = t.removeDoc(d)
		if err == nil && t.eventBatch() != nil {
			t.emitExpiry(d.idEnc, d.raw, ix, ix.expiry(date).UnixMilli())
		}
	default:
		err = t.expireRead(ix, d)
	}
	if err != nil {
		return err
	}
	if dated {
		res.Expiries = append(res.Expiries, ix.expiry(date).UnixNano())
	}
	res.Deleted++
	res.Read++
	return nil
}

// skipLoose reports whether an index scan should pass over the entry
// (key, value) of ix: a loose entry that is no longer its document's. A
// document gone is skipped by the scan's fetch anyway.
func (c *Collection) skipLoose(ix *indexState, key, value []byte, r storage.Reader) (bool, error) {
	if ix == nil || !ttlentry.IsLoose(value) {
		return false, nil
	}
	id := ttlentry.ID(key, value)
	raw, err := r.Get(docKey(c.meta().ID, id))
	if errors.Is(err, storage.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("docstore: read the document of a TTL entry: %w", err)
	}
	current, err := ix.holdsEntry(key, id, raw)
	return !current, err
}

// indexByID returns the state of the index with catalog ID id, nil when
// the collection has none (dropped since).
func (st *collState) indexByID(id uint32) *indexState {
	for _, ix := range st.indexes {
		if ix.def.ID == id {
			return ix
		}
	}
	return nil
}
