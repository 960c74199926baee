package docstore

import "github.com/mayflydb/mayfly/internal/ttlentry"

// The layouts of TTL entries' values (deletion records, loose entries)
// are ttlentry's; this file writes and reads them for docstore.

// entryValue is the value of a document's entries in ix, which has keys
// of them: the bare _id, or in a TTL index ttlValue, marked when the
// document has several entries there.
func entryValue(ix *indexState, idEnc, ttlValue []byte, keys int) []byte {
	switch {
	case !ix.def.TTL:
		return idEnc
	case keys > 1:
		return ttlentry.MultiValue(ttlValue)
	}
	return ttlValue
}

// removeByRecord deletes the document idEnc and every index entry its
// deletion record lists, without reading it. It deletes nothing and
// returns false when the record does not fit the collection's indexes.
// The document expired at expiredAt (Unix ns; 0: not known) by the TTL
// index expiring, whose entry for it is due then too: the engine's cache
// need not look for either (delExpired).
func (t *tx) removeByRecord(idEnc, rec []byte, expiring *indexState, expiredAt int64) (bool, error) {
	secondary := t.st.indexes[1:]
	size, ok := ttlentry.WalkRecord(rec, secondary, indexID, nil)
	if !ok {
		return false, nil
	}
	var err error
	ttlentry.WalkRecord(rec, secondary, indexID, func(i int, key []byte) {
		if err == nil {
			at := int64(0)
			if secondary[i] == expiring {
				at = expiredAt
			}
			err = t.delExpired(2+i, t.arenaKey(secondary[i].prefix, key, idEnc), at)
			t.keysRemoved++
		}
	})
	if err != nil {
		return false, err
	}
	if t.docPrefix == nil {
		t.docPrefix = docPrefix(t.st.meta.ID)
	}
	if err := t.delExpired(0, t.arenaKey(t.docPrefix, nil, idEnc), expiredAt); err != nil {
		return false, err
	}
	t.keysRemoved++
	t.dCount--
	t.dSize -= int64(size)
	return true, nil
}

// arenaKey returns prefix·mid·idEnc built in the transaction's arena: a
// batch of expiry deletions builds thousands of keys, and an allocation
// each is garbage-collection work that grows with the deletion rate. The
// keys live as long as the transaction.
func (t *tx) arenaKey(prefix, mid, idEnc []byte) []byte {
	n := len(prefix) + len(mid) + len(idEnc)
	if cap(t.arena)-len(t.arena) < n {
		t.arena = make([]byte, 0, max(arenaChunk, n))
	}
	start := len(t.arena)
	t.arena = append(append(append(t.arena, prefix...), mid...), idEnc...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// arenaChunk is the size of each piece of a transaction's key arena.
const arenaChunk = 64 << 10

// indexID is ix's catalog ID, as a TTL entry's deletion record lists it
// (ttlentry).
func indexID(ix *indexState) uint32 { return ix.def.ID }
