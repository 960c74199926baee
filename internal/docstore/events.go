package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// Change events. Each write tells the batch it commits what it did
// logically (changestream.Event); the batch stamps and stores the events
// with the documents, atomically. An engine without a change log (unit
// tests) gets none, and the write pays nothing for them.

// eventBatch is the batch's change log hook, nil when it keeps none.
func (t *tx) eventBatch() changestream.EventBatch {
	if eb, ok := t.b.(changestream.EventBatch); ok && eb.RecordsEvents() {
		return eb
	}
	return nil
}

// emit hands ev, filled with the collection's namespace, to the batch.
func (t *tx) emit(ev *changestream.Event) {
	eb := t.eventBatch()
	if eb == nil || t.fromMigrate {
		return
	}
	ev.DB, ev.Coll, ev.UUID = t.st.meta.DB, t.st.meta.Name, t.st.meta.UUID.Data
	if t.txn != nil {
		ev.LSID, ev.TxnNumber = t.txn.lsid, t.txn.txnNumber
	}
	if !t.sortDeletes {
		eb.AddEvent(ev.Encode(make([]byte, 0, ev.Size())))
		return
	}
	// A TTL batch encodes into an arena the batch's events share:
	// thousands of deletions make a few allocations, not one per event.
	// Size bounds the encoding, so Encode appends in place and earlier
	// events keep their bytes; a new arena leaves them in the old one.
	size := ev.Size()
	if cap(t.evArena)-len(t.evArena) < size {
		t.evArena = make([]byte, 0, max(2*cap(t.evArena), 64*size, 4096))
	}
	start := len(t.evArena)
	t.evArena = ev.Encode(t.evArena)
	eb.AddEvent(t.evArena[start:len(t.evArena):len(t.evArena)])
}

// preImages reports whether the collection keeps changeStreamPreAndPostImages.
func (t *tx) preImages() bool {
	if t.images == 0 {
		t.images = 1
		if PreAndPostImages(t.st.meta.Options) {
			t.images = 2
		}
	}
	return t.images == 2
}

// PreAndPostImages reports whether collection options switch on
// changeStreamPreAndPostImages.
func PreAndPostImages(opts bson.D) bool {
	for _, e := range opts {
		if e.Key != "changeStreamPreAndPostImages" {
			continue
		}
		spec, _ := e.Value.(bson.D)
		for _, f := range spec {
			if on, ok := f.Value.(bool); ok && f.Key == "enabled" {
				return on
			}
		}
	}
	return false
}

// emitWrite reports d written over old (nil: an insert). whole says the
// new document replaced the old one as a whole (a replacement), not
// through update operators.
func (t *tx) emitWrite(d, old *stored, whole bool) {
	if t.eventBatch() == nil {
		return
	}
	ev := &changestream.Event{Op: changestream.OpInsert, Doc: d.raw, Elements: t.elements}
	if old != nil {
		ev.RawID = rawID(old.raw)
		ev.Op = changestream.OpReplace
		if !whole {
			ev.Op = changestream.OpUpdate
			// bsonutil.Marshal: bson.Marshal's bytes without its
			// reflection, about half the event's cost on an update.
			if raw, err := bsonutil.Marshal(changestream.UpdateDescription(old.doc, d.doc)); err == nil {
				ev.Update = raw
			}
			if !t.preImages() {
				ev.Doc = nil // updateLookup reads the current document instead
			}
		}
		if t.preImages() {
			ev.Pre = old.raw
		}
	}
	t.emit(ev)
}

// deleteDoc removes old as a delete the client asked for.
func (t *tx) deleteDoc(old *stored) error {
	if err := t.removeLive(old); err != nil {
		return err
	}
	t.emitDelete(old.idEnc, old.raw, nil)
	return nil
}

// rawID is the _id of a stored document as a BSON value (type byte and
// bytes); nil if it has none.
func rawID(raw []byte) []byte {
	if len(raw) == 0 {
		// A TTL deletion by its record has no document: the lookup
		// would only make an error to drop.
		return nil
	}
	v, err := bsoncore.Document(raw).LookupErr("_id")
	if err != nil {
		return nil
	}
	return append([]byte{byte(v.Type)}, v.Data...)
}

// expireDoc removes old, found expired by a write that needs its place,
// with the expiry event the TTL monitor would have sent.
func (t *tx) expireDoc(old *stored) error {
	if err := t.removeLive(old); err != nil {
		return err
	}
	if ix, at, ok := t.expiryOf(old.doc); ok {
		t.emitExpiry(old.idEnc, old.raw, ix, at)
	} else {
		t.emitDelete(old.idEnc, old.raw, nil)
	}
	return nil
}

// expiryOf finds the TTL index that expires doc first and when.
func (t *tx) expiryOf(doc bson.D) (*indexState, int64, bool) {
	var best *indexState
	var at int64
	for _, ix := range t.st.ttl {
		if ix.def.ExpireElements {
			continue
		}
		if when, ok := ix.expiresAt(doc); ok && (best == nil || when.UnixMilli() < at) {
			best, at = ix, when.UnixMilli()
		}
	}
	return best, at, best != nil
}

// emitDelete reports the deletion of the document idEnc (raw is its BSON,
// kept as the pre-image when the collection asks for it).
func (t *tx) emitDelete(idEnc, raw []byte, exp *changestream.Expiry) {
	if t.eventBatch() == nil {
		return
	}
	ev := changestream.Event{Op: changestream.OpDelete, Expired: exp}
	if ev.RawID = rawID(raw); ev.RawID == nil {
		ev.ID = idEnc
	}
	if t.preImages() {
		ev.Pre = raw
	}
	t.emit(&ev)
}

// emitExpiry reports the deletion of an expired document: a delete with
// the TTL index that expired it and when (atMillis); none for an orphan
// (ownership.go), whose owner reports it.
func (t *tx) emitExpiry(idEnc, raw []byte, ix *indexState, atMillis int64) {
	if t.orphan(raw) {
		return
	}
	exp := changestream.Expiry{Index: ix.def.Name, AfterSecs: ix.def.ExpireAfter, AtMillis: atMillis}
	t.emitDelete(idEnc, raw, &exp)
}

// emitExpiryByID is emitExpiry for a document the TTL monitor deleted by
// its deletion record, without reading it: only a collection with
// pre-images on, or one whose orphans must be told apart, pays a read
// for the document.
func (t *tx) emitExpiryByID(idEnc []byte, ix *indexState, date bson.DateTime) error {
	if t.eventBatch() == nil {
		return nil
	}
	var raw []byte
	if t.preImages() || t.checksOwnership() {
		var err error
		if raw, err = t.c.loadRawLocked(idEnc); err != nil {
			return err
		}
	}
	t.emitExpiry(idEnc, raw, ix, ix.expiry(date).UnixMilli())
	return nil
}

// addCatalogEvent adds a catalog change's event (drop, rename,
// dropDatabase, and the DDL events of changestream/ddl.go) to b when
// the engine keeps a change log.
func addCatalogEvent(b any, ev *changestream.Event) {
	if eb, ok := b.(changestream.EventBatch); ok && eb.RecordsEvents() {
		eb.AddEvent(ev.Encode(nil))
	}
}
