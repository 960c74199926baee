package docstore

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// TTLEntries walks a TTL index's date entries in expiry order, from the
// earliest, for readers outside the package that count or judge them
// (expirywatch's forecast). It reads no document unless asked (Stale).
type TTLEntries struct {
	c       *Collection
	ix      *indexState
	tc      *ttlCursor
	started bool
}

// TTLEntries opens a walk over the named TTL index; nil when the
// collection has no such index.
func (c *Collection) TTLEntries(index string) (*TTLEntries, error) {
	ix := c.state.Load().ttlIndex(index)
	if ix == nil {
		return nil, nil
	}
	tc, err := c.openTTLCursor(ix, nil)
	if err != nil {
		return nil, fmt.Errorf("docstore: TTL entries of %s: %w", c.Namespace(), err)
	}
	return &TTLEntries{c: c, ix: ix, tc: tc}, nil
}

// Next moves to the next entry (to the first on its first call).
func (e *TTLEntries) Next() bool {
	if e.started {
		e.tc.advance()
	}
	e.started = true
	return e.tc.ok
}

// Expiry is the entry's date plus the index's expireAfterSeconds; ok is
// false past the index's date entries.
func (e *TTLEntries) Expiry() (at time.Time, ok bool) {
	d, ok := e.ix.entryDate(e.tc.it.Key())
	return e.ix.expiry(d), ok
}

// ListedExpiry is the expiry of the newest stale entry a touch's entry
// lists (0003, "Touches"); ok is false when it lists none. Each stale
// entry not yet due is the newest listed by exactly one later entry of
// its document, so a reader counting documents can take it back there.
func (e *TTLEntries) ListedExpiry() (at time.Time, ok bool) {
	d, ok := ttlentry.NewestStale(e.tc.it.Key(), e.tc.it.Value())
	return e.ix.expiry(bson.DateTime(d)), ok
}

// Stale reports whether the entry is not its document's own (a touch's
// old entry, or one whose document is gone), reading the document when
// the entry is a touch's.
func (e *TTLEntries) Stale() (bool, error) {
	return e.c.skipLoose(e.ix, e.tc.it.Key(), e.tc.it.Value(), e.c.store.eng)
}

// Close releases the walk; it returns the walk's error, if any.
func (e *TTLEntries) Close() error {
	err := e.tc.it.Error()
	if cerr := e.tc.it.Close(); err == nil {
		err = cerr
	}
	return err
}
