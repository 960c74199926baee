// Package paging fills the batches of a cursor's replies from its source:
// a batch ends at its count or before the reply would pass 16 MiB (the
// document that did not fit waits for the next batch); before each
// getMore the cursor's scans are brought up to now, so that documents
// deleted or expired meanwhile are not returned; a tailable cursor looks
// past its end again and, with awaitData, waits for new documents. It
// knows no command syntax: internal/commands parses getMore and builds
// its reply, internal/cursor keeps the open cursors.
package paging

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

const (
	// DefaultBatchSize is the first batch's size when none is asked.
	DefaultBatchSize = 101
	// maxBatchBytes keeps a reply under the 16 MiB document limit, with
	// room for the reply envelope.
	maxBatchBytes = 16*1024*1024 - 16*1024
)

// Pager is a cursor's source as the registry holds it: the source, the
// document a batch read but could not send (the reply was full), and what
// the cursor brings up to date before each getMore.
type Pager struct {
	src     cursor.Source
	pending bson.D
	has     bool
	done    bool
	live    Live
}

// New pages src, re-checking what live tracked before each getMore.
func New(src cursor.Source, live Live) *Pager { return &Pager{src: src, live: live} }

// Next returns the pending document first, then the source's.
func (p *Pager) Next() (bson.D, bool, error) {
	if p.has {
		p.has = false
		return p.pending, true, nil
	}
	if p.done {
		return nil, false, nil
	}
	d, ok, err := p.src.Next()
	if !ok || err != nil {
		p.done = true
	}
	return d, ok, err
}

// Close closes the source.
func (p *Pager) Close() error { return p.src.Close() }

// StaysOpen reports whether the cursor stays open after a batch, as on
// mongod: a tailable cursor always does; another closes once its source
// has ended, and a batch that stopped at its count leaves it open unless
// the source knows it is at its end without reading on (documents served
// from memory, a find's limit reached). A scan learns that it has ended
// only on the next getMore, which then answers an empty batch and id 0.
func (p *Pager) StaysOpen() bool {
	switch {
	case p.has || p.tail() != nil:
		return true
	case p.done:
		return false
	}
	ends, ok := p.src.(interface{ exhausted() bool })
	return !ok || !ends.exhausted()
}

// Registered lets the cursor's scans hold less between getMores, once
// the registry keeps the cursor.
func (p *Pager) Registered() {
	for _, s := range p.live.scans {
		s.Lean()
	}
}

// Fill reads up to n documents (n < 0: no count limit) that fit in a
// reply; n == 0 gives an empty batch (find's batchSize: 0 opens a cursor).
func (p *Pager) Fill(n int64) (bson.A, error) {
	batch := bson.A{}
	size := 0
	for n < 0 || int64(len(batch)) < n {
		d, ok, err := p.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		raw, err := EncodeResult(d)
		if err != nil {
			return nil, err
		}
		if len(batch) > 0 && size+len(raw) > maxBatchBytes {
			p.pending, p.has = d, true
			break
		}
		size += len(raw)
		batch = append(batch, bson.Raw(raw))
	}
	return batch, nil
}

// Reopen brings the cursor's scans up to the time of the getMore that
// continues it, under ctx: documents deleted, expired or no longer
// matching since the last batch are not returned, and the one document
// read ahead for the last batch is dropped if it is one of them. A
// collection dropped meanwhile fails it with mongod's QueryPlanKilled.
func (p *Pager) Reopen(ctx context.Context) error {
	live, err := p.live.reopen(ctx)
	var dropped *docstore.DroppedError
	if errors.As(err, &dropped) {
		return mongoerr.Newf(mongoerr.QueryPlanKilled, "collection dropped. UUID %s", bsonutil.FormatUUID(dropped.UUID.Data))
	}
	if err != nil {
		return err
	}
	if p.has && !live {
		p.has, p.pending = false, nil
	}
	return nil
}

// More fills a getMore's batch of up to n documents; a tailable cursor
// looks again past its end, and with awaitData waits for new documents
// when none came.
func (p *Pager) More(w *Wait, n int64) (bson.A, error) {
	tail := p.tail()
	if tail != nil {
		p.done = false
	}
	batch, err := p.Fill(n)
	if err == nil && len(batch) == 0 && tail != nil && tail.Awaits() {
		return p.awaitMore(w, n)
	}
	return batch, err
}
