package docstore

import (
	"math"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// ttlProgress remembers how far the TTL passes over one index have got, so
// that a pass seeks straight to the first entry that may still be there
// instead of walking from the earliest date over the deletion tombstones
// of every document already expired (until compaction drops them, each of
// those costs a step, and an expiry storm leaves hundreds of thousands).
//
// The mark is a date: every entry dated before it was deleted by an
// earlier pass. Writes can add entries below it (a document with an old
// date, or an expireAt sooner than all others), so every write announces,
// after its commit, the earliest date it added; a pass starts from the
// lower of the mark and the announcements. Because announcements follow
// commits, a write announced before a pass begins is visible to the pass's
// walk, and one announced later is seen by the next pass: no entry can be
// stranded below the mark.
type ttlProgress struct {
	// mark is where the next pass starts (math.MinInt64: the earliest
	// entry).
	mark atomic.Int64
	// announced is the earliest date written since the latest pass began
	// (math.MaxInt64: none).
	announced atomic.Int64
	// slots bounds the index's expiry batches in flight (ttl.go): a
	// batch takes one before it gathers and gives it back once applied.
	slots chan struct{}
}

func newTTLProgress() *ttlProgress {
	p := &ttlProgress{slots: make(chan struct{}, maxBatchesInFlight)}
	p.mark.Store(math.MinInt64)
	p.announced.Store(math.MaxInt64)
	return p
}

// announce records that a committed write added an entry dated d.
func (p *ttlProgress) announce(d int64) {
	for {
		cur := p.announced.Load()
		if d >= cur || p.announced.CompareAndSwap(cur, d) {
			return
		}
	}
}

// begin folds the announcements into the mark and returns it: the date a
// pass starts from. The mark is lowered now, not when the pass ends, so a
// pass that is abandoned leaves nothing out.
func (p *ttlProgress) begin() int64 {
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

// start is where a look for the earliest entry may start.
func (p *ttlProgress) start() int64 {
	return min(p.mark.Load(), p.announced.Load())
}

// finish raises the mark to left, the earliest date of an entry the pass
// that began at begun left in the index, unless another pass moved the
// mark meanwhile.
func (p *ttlProgress) finish(begun, left int64) {
	if left > begun {
		p.mark.CompareAndSwap(begun, left)
	}
}

// ttlSeekKey is where a walk of the index's date entries starting at date
// d begins: nil (the earliest entry) for the start of time, and always for
// a descending index, whose walk runs backwards.
func (ix *indexState) ttlSeekKey(d int64) []byte {
	if d == math.MinInt64 || ix.def.Fields[0].Desc {
		return nil
	}
	if ix.clustered {
		// A clustered entry is the date's key itself, which a walk
		// would skip as the entry it stopped at: start just after the
		// last possible key of the millisecond before (dates encode in
		// a fixed width).
		return append(keyenc.AppendValue(append([]byte(nil), ix.prefix...), bson.DateTime(d-1)), 0xFF)
	}
	return keyenc.AppendValue(append([]byte(nil), ix.prefix...), bson.DateTime(d))
}

// announceTTLDates tells the progress of each TTL index the earliest date
// of the entries a committed write added to it.
func (t *tx) announceTTLDates() {
	for i, d := range t.ttlAdded {
		if d != math.MaxInt64 {
			t.st.ttl[i].progress.announce(d)
		}
	}
}

// noteTTLEntry records, before commit, an entry added to index ix.
func (t *tx) noteTTLEntry(ix *indexState, key []byte) {
	if ix.progress == nil {
		return
	}
	d, ok := ix.keyDate(key)
	if !ok {
		return
	}
	if t.ttlAdded == nil {
		t.ttlAdded = t.ttlAddedBuf[:0]
		if len(t.st.ttl) > len(t.ttlAddedBuf) {
			t.ttlAdded = make([]int64, 0, len(t.st.ttl))
		}
		t.ttlAdded = t.ttlAdded[:len(t.st.ttl)]
		for i := range t.ttlAdded {
			t.ttlAdded[i] = math.MaxInt64
		}
	}
	for i, tix := range t.st.ttl {
		if tix == ix {
			t.ttlAdded[i] = min(t.ttlAdded[i], int64(d))
		}
	}
}
