package docstore

import (
	"context"
	"fmt"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// IDIter yields the _ids of the index entries a plan reads, without
// reading the documents (see CandidateIDs).
type IDIter struct {
	d DocIter // held by value: the walk is one allocation, not two
}

// CandidateIDs returns the _ids a plan's index entries point to when its
// bounds express the filter exactly: an index scan of a secondary index
// with no predicate left over. Every matching document is then among
// them, and almost every one of them matches (a document may have expired
// or changed since), so a write that re-checks each document under its
// lock needs no scan that reads each document first. ok is false for any
// other plan. The candidates include a shard's orphans even under an
// ownership filter (WithOwnership): the write's re-check under the lock
// tests ownership on the document it reads anyway (OwnershipOf), rather
// than the walk reading and decoding each document a second time.
func (c *Collection) CandidateIDs(plan *Plan, f *query.Filter) (it *IDIter, ok bool) {
	if plan == nil || plan.Kind != IndexScan || plan.idScan || f == nil ||
		len(plan.covered) == 0 || plan.hasResidual(f) {
		return nil, false
	}
	return &IDIter{d: c.newScan(plan, f)}, true
}

// WithContext makes the walk stop with ctx's error once ctx is done.
func (it *IDIter) WithContext(ctx context.Context) *IDIter {
	it.d.WithContext(ctx)
	return it
}

// Next returns the next candidate _id; ok is false at the end.
func (it *IDIter) Next() (id any, ok bool, err error) {
	d := &it.d
	for d.err == nil {
		if d.ctx != nil && d.Stats.KeysExamined%interruptEvery == 0 {
			if err := d.ctx.Err(); err != nil {
				return nil, false, fmt.Errorf("docstore: scan: %w", err)
			}
		}
		if !d.advanceIndex() {
			break
		}
		d.Stats.KeysExamined++
		if d.staleEntry() {
			if d.err != nil {
				break
			}
			continue
		}
		idEnc := ttlentry.ID(d.it.Key(), d.it.Value())
		if d.markSeen(idEnc) {
			d.Stats.DupsDropped++
			continue
		}
		v, _, err := keyenc.DecodeValue(idEnc)
		if err != nil {
			return nil, false, fmt.Errorf("docstore: decode index entry's _id: %w", err)
		}
		return v, true, nil
	}
	return nil, false, d.err
}

// Close releases the iterator.
func (it *IDIter) Close() error { return it.d.Close() }
