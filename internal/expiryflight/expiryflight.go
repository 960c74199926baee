// Package expiryflight tracks a collection's expiry batches that were
// proposed and are not applied yet (docs/design/0007). On a replica set
// the primary's TTL monitor proposes a batch of compact expiries and goes
// on gathering the next while the first waits for its replication round
// trip: its documents stay in storage, expired and invisible, until the
// batch applies. A write that would read such a document to change it
// waits for the batch instead, and a donor entering its critical section
// waits for every batch (docstore's SettleExpiries).
package expiryflight

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Batch is one expiry batch proposed and not yet applied.
type Batch struct {
	done chan struct{}
	err  error // set before done closes
}

// NewBatch returns a batch in flight.
func NewBatch() *Batch { return &Batch{done: make(chan struct{})} }

// Wait returns once the batch is applied, with its failure if it failed.
func (b *Batch) Wait() error {
	<-b.done
	return b.err
}

// Done is closed once the batch is applied or failed.
func (b *Batch) Done() <-chan struct{} { return b.done }

// Set is a collection's documents in expiry batches not yet applied, by
// encoded _id. The zero value is empty and ready.
type Set struct {
	n   atomic.Int64 // len(ids), read without mu on every write
	mu  sync.Mutex
	ids map[string]*Batch
}

// Add records ids (encoded _ids) as deleted by b once it applies.
func (s *Set) Add(ids [][]byte, b *Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]*Batch{}
	}
	for _, id := range ids {
		s.ids[string(id)] = b
	}
	s.n.Store(int64(len(s.ids)))
}

// Finish ends b with err and forgets its ids.
func (s *Set) Finish(ids [][]byte, b *Batch, err error) {
	s.mu.Lock()
	for _, id := range ids {
		if s.ids[string(id)] == b {
			delete(s.ids, string(id))
		}
	}
	s.n.Store(int64(len(s.ids)))
	s.mu.Unlock()
	b.err = err
	close(b.done)
}

// Len is how many documents are in flight.
func (s *Set) Len() int { return int(s.n.Load()) }

// BatchOf is the batch that deletes id, or nil.
func (s *Set) BatchOf(id []byte) *Batch {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[string(id)]
}

// Pending is every batch in flight now.
func (s *Set) Pending() []*Batch {
	if s.n.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Batch
	for _, b := range s.ids {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}
