package repl

import (
	"context"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Base is the engine under the replicated one: pebblestore, which can
// rebuild a batch from its repr.
type Base interface {
	storage.Engine
	// AppendRepr adds the writes of repr, a batch's encoded writes (see
	// pebblestore), to b.
	AppendRepr(b storage.Batch, repr []byte) error
}

// engine is the storage.Engine the docstore writes through in a replica
// set: reads go straight to the base engine, which holds the applied
// state; a batch's Commit proposes the batch's writes through raft and
// returns once this member has applied them, so the docstore never learns
// that it is replicated. On a member that is not a writable primary every
// commit fails with ErrNotPrimary.
type engine struct {
	Base
	rs *Replica
}

var _ storage.Engine = (*engine)(nil)

// proposeTimeout bounds a write's wait for its entry: long enough for an
// election, short enough that a stuck write fails (the outcome unknown).
const proposeTimeout = 30 * time.Second

// NewBatch implements storage.Engine.
func (e *engine) NewBatch() storage.Batch {
	return &batch{inner: e.Base.NewBatch(), rs: e.rs}
}

// Sync implements storage.Engine: a write is durable once applied, since
// its log entry was synced before it committed.
func (e *engine) Sync() error { return nil }

// The batch is the write path's contract with replication: it carries
// change events and count changes, and ships its writes as one record.
var (
	_ changestream.EventBatch = (*batch)(nil)
	_ storage.CountNoter      = (*batch)(nil)
)

// batch collects a write and what the other members need to know of it.
type batch struct {
	inner   storage.Batch
	rs      *Replica
	catalog bool
	deltas  []CountDelta
	events  [][]byte
	// expiries are the TTL entry keys of documents the monitor expired,
	// in their compact form (expiry.go).
	expiries expiryKeys
}

var _ storage.ExpiryBatch = (*batch)(nil)

// AddExpiry implements storage.ExpiryBatch.
func (b *batch) AddExpiry(key []byte) { b.expiries.add(key) }

// AddEvent implements changestream.EventBatch: the events travel in the
// entry, and every member writes them under the entry's ts.
func (b *batch) AddEvent(ev []byte) { b.events = append(b.events, ev) }

// RecordsEvents implements changestream.EventBatch: a replica set's log,
// like mongod's oplog, is always on.
func (b *batch) RecordsEvents() bool { return true }

// Set implements storage.Batch.
func (b *batch) Set(key, value []byte) error {
	b.note(key, nil)
	return b.inner.Set(key, value)
}

// Delete implements storage.Batch.
func (b *batch) Delete(key []byte) error {
	b.note(key, nil)
	return b.inner.Delete(key)
}

// DeleteRange implements storage.Batch.
func (b *batch) DeleteRange(start, end []byte) error {
	b.note(start, end)
	return b.inner.DeleteRange(start, end)
}

// note marks a batch that touches the catalog: keys under a tag that
// keyspace marks as defining collections.
func (b *batch) note(start, end []byte) {
	if b.catalog {
		return
	}
	lo := byte(0)
	if len(start) > 0 {
		lo = start[0]
	}
	hi := lo
	if len(end) > 0 {
		hi = end[0]
	}
	b.catalog = keyspace.CatalogWithin(lo, hi)
}

// NoteCounts implements the docstore's counting hook: the collection's
// document count and size change by docs and bytes.
// A change with no count delta is noted too: it tells the other members
// which collection the batch wrote (access control reloads its users).
func (b *batch) NoteCounts(collID uint64, docs, bytes int64) {
	b.deltas = append(b.deltas, CountDelta{CollID: collID, Docs: docs, Bytes: bytes})
}

// Commit implements storage.Batch.
func (b *batch) Commit(bool) error {
	wait, err := b.proposeAsync(false)
	if err != nil {
		return err
	}
	return wait()
}

// CommitAsync implements storage.ExpiryBatch: it proposes the entry in
// the background, behind the clients' writes, and returns; wait returns
// once this member has applied it.
func (b *batch) CommitAsync() (wait func() error, err error) {
	return b.proposeAsync(true)
}

// proposeAsync proposes the entry and returns; wait returns once this
// member has applied it.
func (b *batch) proposeAsync(background bool) (wait func() error, err error) {
	if b.inner.Len() == 0 && len(b.events) == 0 && b.expiries.n == 0 {
		return func() error { return nil }, nil
	}
	ent, err := b.entry()
	if err != nil {
		return nil, err
	}
	n := b.rs.node()
	if n == nil {
		return nil, fmt.Errorf("repl: commit: %w", ErrNotPrimary)
	}
	ch, err := n.startProposal(ent, background)
	if err != nil {
		return nil, fmt.Errorf("repl: commit: %w", err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		defer cancel()
		if err := n.awaitProposal(ctx, ent.proposal, ch); err != nil {
			return fmt.Errorf("repl: commit: %w", err)
		}
		return nil
	}, nil
}

// entry is the write entry that carries the batch.
func (b *batch) entry() (*entry, error) {
	ent := &entry{kind: kindWrite, deltas: b.deltas, events: b.events, expiries: b.expiries}
	if b.inner.Len() > 0 {
		repr, err := b.inner.(storage.Encodable).Repr()
		if err != nil {
			return nil, err
		}
		ent.payload = repr
	}
	if b.catalog {
		ent.flags |= flagCatalog
	}
	if b.expiries.n > 0 {
		ent.flags |= flagExpiry
	}
	return ent, nil
}

// Len implements storage.Batch; an expiry counts as one write.
func (b *batch) Len() int { return b.inner.Len() + b.expiries.n }

// Close implements storage.Batch.
func (b *batch) Close() error { return b.inner.Close() }
