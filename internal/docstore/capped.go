package docstore

import "bytes"

// Capped collections keep at most CappedMax documents and CappedSize bytes;
// an insert past either limit evicts the oldest documents in the same
// atomic batch. "Oldest" is the smallest _id, which is insertion order for
// the ObjectIds the server generates (a documented limit: with client-chosen
// _ids the smallest _id goes first).

// evictForCap removes the oldest documents until the collection, with the
// pending batch applied, fits its limits. keep is the document just written.
func (t *tx) evictForCap(keep []byte) error {
	meta := t.st.meta
	if !meta.Capped {
		return nil
	}
	over := func() bool {
		n, size := t.c.count.Load()+t.dCount, t.c.dataSize.Load()+t.dSize
		return (meta.CappedMax > 0 && n > meta.CappedMax) || (meta.CappedSize > 0 && size > meta.CappedSize)
	}
	if !over() {
		return nil
	}
	p := docPrefix(meta.ID)
	it, err := t.c.store.eng.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	var victims [][]byte
	for ok := it.First(); ok && over(); ok = it.Next() {
		id := it.Key()[len(p):]
		if bytes.Equal(id, keep) {
			continue
		}
		victims = append(victims, append([]byte(nil), id...))
		t.dCount--
		t.dSize -= int64(len(it.Value()))
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return err
	}
	return t.removeVictims(victims)
}

func (t *tx) removeVictims(ids [][]byte) error {
	for _, id := range ids {
		if t.locks != nil && !t.locks.tryStripe(t.c.stripeOf(id)) {
			return errRetry
		}
		old, err := t.c.loadForWrite(id)
		if err != nil || old == nil {
			return err
		}
		// removeDoc counts the document again; undo the estimate above.
		t.dCount++
		t.dSize += int64(len(old.raw))
		if err := t.deleteDoc(old); err != nil {
			return err
		}
	}
	return nil
}
