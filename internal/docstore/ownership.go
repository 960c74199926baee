package docstore

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Orphans and the expiry machinery (docs/design/0014, "Orphans and
// expiry"). A shard member stores documents it does not own: a donor's
// copy of a range it gave away, until the range deleter removes it, and
// a recipient's copy of a range still moving. The changes the expiry
// machinery makes on its own — a TTL deletion (by the monitor, by a
// write that finds an expired document in its way), an lruLimit
// eviction, an expired element's removal — are silent for such a
// document, as a migration's own writes are (frommigrate.go): the shard
// that owns the document reports the change, and a stream through the
// router sees it once.

// Ownership answers, for the expiry machinery, which documents of a
// collection this member owns: a shard member's ownership filter over
// its routing metadata, which the docstore does not read itself.
type Ownership interface {
	// ExpiryOwner returns ns's ownership test, nil when every document
	// counts as owned (ns is not sharded). held is true while the
	// answer may be about to change under the member (its placement is
	// being committed, or not known yet): the TTL monitor then leaves
	// ns's documents for a later pass rather than guess.
	ExpiryOwner(ns string) (owns func(bson.D) bool, held bool)
}

// SetOwnership gives the store its member's ownership answers; a store
// without one owns every document.
func (s *Store) SetOwnership(o Ownership) {
	s.ownership.Store(&o)
}

// SettleExpiries waits until every change the expiry machinery decided
// for db.coll before the call is applied, or ctx ends. A shard's donor
// calls it once its answers for the collection are held (its critical
// section), so that no deletion it decided as the owner before lands
// after the recipient's last pull of its writes: the recipient would
// keep the document and report its expiry too. A decision is made
// under the stripes of the documents it changes and applied before
// they are released, or handed to the collection's batches in flight
// (inflight.go): taking every stripe once, then waiting for those
// batches, covers both.
func (s *Store) SettleExpiries(ctx context.Context, db, coll string) error {
	c := s.Collection(db, coll)
	if c == nil {
		return nil
	}
	l := &lockSet{c: c}
	l.lockAllStripes()
	batches := c.inFlight.Pending()
	l.release()
	for _, b := range batches {
		select {
		case <-b.Done():
		case <-ctx.Done():
			return fmt.Errorf("docstore: settle the expiries of %s.%s: %w", db, coll, ctx.Err())
		}
	}
	return nil
}

// ownershipOf asks the store's Ownership about the collection of t,
// once per batch.
func (t *tx) ownershipOf() (owns func(bson.D) bool, held bool) {
	if !t.ownsLooked {
		t.ownsLooked = true
		if o := t.c.store.ownership.Load(); o != nil {
			t.owns, t.ownsHeld = (*o).ExpiryOwner(t.c.Namespace())
		}
	}
	return t.owns, t.ownsHeld
}

// checksOwnership reports whether the expiry machinery must read a
// document of this batch to know whether the member owns it.
func (t *tx) checksOwnership() bool {
	owns, _ := t.ownershipOf()
	return owns != nil
}

// orphan reports whether raw, a stored document, is one this member
// does not own. A document it cannot read counts as owned: its change
// is reported rather than lost.
func (t *tx) orphan(raw []byte) bool {
	owns, _ := t.ownershipOf()
	if owns == nil || raw == nil {
		return false
	}
	d := &stored{raw: raw}
	if err := d.decode(); err != nil {
		return false
	}
	return !owns(d.doc)
}

// orphanByID is orphan for the stored document idEnc, read only when the
// collection's ownership needs it.
func (t *tx) orphanByID(idEnc []byte) (bool, error) {
	if !t.checksOwnership() {
		return false, nil
	}
	old, err := t.c.loadLocked(idEnc)
	if err != nil || old == nil {
		return false, err
	}
	return t.orphan(old.raw), nil
}

// heldByOwnership ends a TTL pass over a collection whose ownership is
// held. The pass does not finish, so the progress mark stays where the
// pass began, and the monitor, seeing the expired entries still there,
// comes back after its floor.
func (p *ExpiryPass) heldByOwnership(t *tx) bool {
	if _, held := t.ownershipOf(); !held {
		return false
	}
	p.done = true
	return true
}
