// Package ttlmark remembers how far the TTL passes over one index have
// got, so that a pass seeks straight to the first entry that may still be
// there instead of walking from the earliest date over the deletion
// tombstones of every document already expired (until compaction drops
// them, each of those costs a step, and an expiry storm leaves hundreds
// of thousands).
//
// The mark is a date: every entry dated before it was deleted by an
// earlier pass. Writes can add entries below it (a document with an old
// date, or an expireAt sooner than all others), so every write announces,
// after its commit, the earliest date it added; a pass starts from the
// lower of the mark and the announcements. Because announcements follow
// commits, a write announced before a pass begins is visible to the pass's
// walk, and one announced later is seen by the next pass: no entry can be
// stranded below the mark.
package ttlmark

import (
	"math"
	"sync/atomic"
)

// Progress is one TTL index's mark, its announcements, and the slots of
// its expiry batches in flight.
type Progress struct {
	// mark is where the next pass starts (math.MinInt64: the earliest
	// entry).
	mark atomic.Int64
	// announced is the earliest date written since the latest pass began
	// (math.MaxInt64: none).
	announced atomic.Int64
	// slots bounds the index's expiry batches in flight: a batch takes
	// one before it gathers and gives it back once applied.
	slots chan struct{}
}

// New returns the progress of an index no pass has walked, whose expiry
// batches in flight are at most batches.
func New(batches int) *Progress {
	p := &Progress{slots: make(chan struct{}, batches)}
	p.mark.Store(math.MinInt64)
	p.announced.Store(math.MaxInt64)
	return p
}

// Slots is the index's expiry batches in flight: a batch sends to take a
// slot and receives to give it back.
func (p *Progress) Slots() chan struct{} { return p.slots }

// Mark is where the next pass starts, announcements aside.
func (p *Progress) Mark() int64 { return p.mark.Load() }

// Announce records that a committed write added an entry dated d.
func (p *Progress) Announce(d int64) {
	for {
		cur := p.announced.Load()
		if d >= cur || p.announced.CompareAndSwap(cur, d) {
			return
		}
	}
}

// Begin folds the announcements into the mark and returns it: the date a
// pass starts from. The mark is lowered now, not when the pass ends, so a
// pass that is abandoned leaves nothing out.
func (p *Progress) Begin() int64 {
	low := p.announced.Swap(math.MaxInt64)
	for {
		mark := p.mark.Load()
		if low >= mark {
			return mark
		}
		if p.mark.CompareAndSwap(mark, low) {
			return low
		}
	}
}

// Start is where a look for the earliest entry may start.
func (p *Progress) Start() int64 {
	return min(p.mark.Load(), p.announced.Load())
}

// Finish raises the mark to left, the earliest date of an entry the pass
// that began at begun left in the index, unless another pass moved the
// mark meanwhile.
func (p *Progress) Finish(begun, left int64) {
	if left > begun {
		p.mark.CompareAndSwap(begun, left)
	}
}
