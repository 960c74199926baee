package docstore

import (
	"bytes"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// CatalogEdit gathers the changes one command makes to a collection's
// catalog entry (collMod's options, index options and clustered expiry)
// on a copy, and commits them as one write together with the command's
// modify event. On mongod a collMod is one oplog entry written in the
// catalog change's own transaction: a crash keeps all of it, with its
// event, or none. The edit holds the collection's schema lock from Edit
// to Close, so no other catalog change comes between.
type CatalogEdit struct {
	c         *Collection
	old, next *catalog.Collection
	closed    bool
}

// Modify is the modify event of an edit: Desc is the command less its
// collMod field and generic arguments, Before the stateBeforeChange
// mongod gives (collectionOptions with the uuid, and indexOptions when an
// index changed). A time-series collection's modify is its view's: the
// new view definition, without stateBeforeChange.
type Modify struct {
	Desc, Before bson.D
}

// Edit starts an edit of the collection's catalog entry; Close ends it.
func (c *Collection) Edit() *CatalogEdit {
	c.schemaMu.Lock()
	old := c.meta()
	return &CatalogEdit{c: c, old: old, next: old.Clone()}
}

// Old is the catalog entry as it was when the edit began.
func (e *CatalogEdit) Old() *catalog.Collection { return e.old }

// Meta is the edited entry, with the changes made so far.
func (e *CatalogEdit) Meta() *catalog.Collection { return e.next }

// IsClustered reports whether the collection is clustered by _id.
func (e *CatalogEdit) IsClustered() bool { return e.next.Clustered }

// SetOptions replaces the collection's options (as listCollections shows
// them).
func (e *CatalogEdit) SetOptions(opts bson.D) { e.next.Options = opts }

// SetClusteredExpiry sets a clustered collection's expireAfterSeconds;
// secs < 0 turns it off. The commit gives the collection a new TTL state
// (from the earliest date).
func (e *CatalogEdit) SetClusteredExpiry(secs int64) error {
	if !e.next.Clustered {
		return mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' option is only supported on collections clustered by _id")
	}
	e.next.SetClusteredExpiry(secs)
	return nil
}

// ModifyIndex rewrites the named index's definition through fn, which
// works on a copy: an error leaves the edit as it was.
func (e *CatalogEdit) ModifyIndex(name string, fn func(ix *catalog.Index) error) error {
	ix := e.next.Index(name)
	if ix == nil || !ix.Ready { // mongod's collMod finds ready indexes only
		return mongoerr.Newf(mongoerr.IndexNotFound, "cannot find index %s for ns %s", name, e.next.Namespace())
	}
	cp := *ix
	if err := fn(&cp); err != nil {
		return err
	}
	*ix = cp
	return nil
}

// Commit writes the edited entry, with the modify event ev (nil: none) in
// the same batch, and ends the edit.
func (e *CatalogEdit) Commit(ev *Modify) error {
	defer e.Close()
	var evs []*changestream.Event
	if ev != nil {
		evs = append(evs, modifyEvent(e.next, ev))
	}
	if sameMeta(e.old, e.next) {
		// Nothing changed (a collMod repeating the options): the event
		// alone, and the TTL states keep their progress.
		return e.c.store.commitEvents(evs...)
	}
	if err := e.c.saveMeta(e.next, evs...); err != nil {
		return err
	}
	// An index's or the clustered collection's TTL may have changed.
	e.c.store.indexesChanged()
	return nil
}

// Close ends the edit; without a Commit its changes are dropped. It may
// be called again.
func (e *CatalogEdit) Close() {
	if !e.closed {
		e.closed = true
		e.c.schemaMu.Unlock()
	}
}

// modifyEvent is the modify event of a collMod that left meta.
func modifyEvent(meta *catalog.Collection, m *Modify) *changestream.Event {
	ev := &changestream.Event{Op: changestream.OpModify, DB: meta.DB, Coll: meta.Name}
	switch ev.NsType = changestream.NsTypeOf(meta); ev.NsType {
	case changestream.NsCollection:
		ev.NsType = ""
		ev.UUID = meta.UUID.Data
		ev.Desc, ev.Before = changestream.MarshalDesc(m.Desc), changestream.MarshalDesc(m.Before)
	case changestream.NsTimeseries:
		ev.Desc = changestream.MarshalDesc(changestream.TimeseriesView(meta))
	default:
		ev.Desc = changestream.MarshalDesc(meta.Options)
	}
	return ev
}

// sameMeta reports whether two catalog entries store the same.
func sameMeta(a, b *catalog.Collection) bool {
	ra, err := bson.Marshal(a)
	if err != nil {
		return false
	}
	rb, err := bson.Marshal(b)
	return err == nil && bytes.Equal(ra, rb)
}

// commitEvents commits a batch that holds only events, when there are
// some and the engine keeps a change log.
func (s *Store) commitEvents(evs ...*changestream.Event) error {
	if len(evs) == 0 {
		return nil
	}
	b := s.eng.NewBatch()
	defer b.Close()
	eb, ok := b.(changestream.EventBatch)
	if !ok || !eb.RecordsEvents() {
		return nil
	}
	for _, ev := range evs {
		eb.AddEvent(ev.Encode(nil))
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: change event: %w", err)
	}
	return nil
}
