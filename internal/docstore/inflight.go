package docstore

import "github.com/mayflydb/mayfly/internal/expiryflight"

// Expiry batches in flight (docs/design/0007). On a replica set the
// primary's monitor proposes a batch of compact expiries and goes on
// gathering the next while the first waits for its replication round
// trip: the documents stay in storage, expired and invisible, until the
// batch applies. A write that would read such a document to change it
// (an insert in place of an expired document, an update after the clock
// went back, an eviction) would decide from a state the log has already
// left behind, so it waits for the batch instead; the monitor's own walk
// skips them.

// errInFlight tells a write to release its locks and wait for batch,
// which deletes a document the write would change, then start over.
type errInFlight struct{ batch *expiryflight.Batch }

func (e errInFlight) Error() string {
	return "docstore: the document's expiry is being replicated"
}

// loadForWrite is loadLocked for a write that may change what it loads:
// a document in an expiry batch in flight asks the write to wait for it.
func (c *Collection) loadForWrite(idEnc []byte) (*stored, error) {
	return c.loadForWriteInto(new(loaded), idEnc)
}

// loadForWriteInto is loadForWrite into l (loadInto).
func (c *Collection) loadForWriteInto(l *loaded, idEnc []byte) (*stored, error) {
	if b := c.inFlight.BatchOf(idEnc); b != nil {
		return nil, errInFlight{batch: b}
	}
	return c.loadInto(l, c.store.eng, idEnc)
}
