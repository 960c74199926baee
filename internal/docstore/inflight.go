package docstore

import (
	"sync"
	"sync/atomic"
)

// Expiry batches in flight (docs/design/0007). On a replica set the
// primary's monitor proposes a batch of compact expiries and goes on
// gathering the next while the first waits for its replication round
// trip: the documents stay in storage, expired and invisible, until the
// batch applies. A write that would read such a document to change it
// (an insert in place of an expired document, an update after the clock
// went back, an eviction) would decide from a state the log has already
// left behind, so it waits for the batch instead; the monitor's own walk
// skips them.

// pendingBatch is one expiry batch proposed and not yet applied.
type pendingBatch struct {
	done chan struct{}
	err  error // set before done closes
}

// Wait returns once the batch is applied, with its failure if it failed.
func (b *pendingBatch) Wait() error {
	<-b.done
	return b.err
}

// inFlight is a collection's documents in expiry batches not yet applied.
type inFlight struct {
	n   atomic.Int64 // len(ids), read without mu on every write
	mu  sync.Mutex
	ids map[string]*pendingBatch
}

// add records ids (encoded _ids) as deleted by b once it applies.
func (f *inFlight) add(ids [][]byte, b *pendingBatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]*pendingBatch{}
	}
	for _, id := range ids {
		f.ids[string(id)] = b
	}
	f.n.Store(int64(len(f.ids)))
}

// finish ends b with err and forgets its ids.
func (f *inFlight) finish(ids [][]byte, b *pendingBatch, err error) {
	f.mu.Lock()
	for _, id := range ids {
		if f.ids[string(id)] == b {
			delete(f.ids, string(id))
		}
	}
	f.n.Store(int64(len(f.ids)))
	f.mu.Unlock()
	b.err = err
	close(b.done)
}

// batchOf is the batch that deletes id, or nil.
func (f *inFlight) batchOf(id []byte) *pendingBatch {
	if f.n.Load() == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[string(id)]
}

// errInFlight tells a write to release its locks and wait for batch,
// which deletes a document the write would change, then start over.
type errInFlight struct{ batch *pendingBatch }

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
	if b := c.inFlight.batchOf(idEnc); b != nil {
		return nil, errInFlight{batch: b}
	}
	return c.loadInto(l, c.store.eng, idEnc)
}
