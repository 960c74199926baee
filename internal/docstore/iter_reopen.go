package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
)

// ErrCollectionDropped is returned by a scan whose collection was dropped
// between the commands that read it (a cursor's getMore).
var ErrCollectionDropped = errors.New("docstore: collection dropped")

// DroppedError carries the dropped collection's UUID for the client's
// message.
type DroppedError struct{ UUID bson.Binary }

func (e *DroppedError) Error() string { return ErrCollectionDropped.Error() }

// Unwrap lets errors.Is find ErrCollectionDropped.
func (e *DroppedError) Unwrap() error { return ErrCollectionDropped }

// Reopen prepares a scan to go on in a later command (a cursor's
// getMore): it takes that command's context, fails if the collection was
// dropped, re-reads the clock for expiry, and reopens its storage
// iterator at the same position so that documents deleted, changed or
// expired since are seen as they are now, not as they were when the scan
// began. It reports whether the last document it yielded is still there,
// unexpired and matching (true after the scan's end, when nothing is
// pending from it).
func (d *DocIter) Reopen(ctx context.Context) (lastLive bool, err error) {
	d.ctx = ctx
	if d.err != nil {
		return false, d.err
	}
	if d.c.dropped.Load() {
		d.err = fmt.Errorf("docstore: scan: %w", &DroppedError{UUID: d.c.meta().UUID})
		return false, d.err
	}
	d.now = d.c.store.clock.Now()
	if d.it != nil && d.it.Valid() {
		d.reopenIterator()
	}
	if d.err != nil {
		return false, d.err
	}
	return d.lastStillLive(), d.err
}

// reopenIterator replaces the iterator by a fresh one standing on the same key, or
// on the next one in scan order if that key is gone.
func (d *DocIter) reopenIterator() {
	if err := d.it.Error(); err != nil {
		d.err = fmt.Errorf("docstore: scan: %w", err)
		return
	}
	key := append([]byte(nil), d.it.Key()...)
	_ = d.it.Close()
	d.it = nil
	it, err := d.reader.NewIter(d.lo, d.hi)
	if err != nil {
		d.err = fmt.Errorf("docstore: reopen scan: %w", err)
		return
	}
	d.it = it
	var ok bool
	if d.plan.Reverse {
		ok = it.SeekLT(append(key, 0))
	} else {
		ok = it.SeekGE(key)
	}
	d.unconsumed = !ok || !bytes.Equal(it.Key(), key)
}

func (d *DocIter) noteYielded(doc bson.D) {
	id, ok := lookupID(doc)
	if !ok {
		d.lastID = nil
		return
	}
	buf := d.lastID[:0]
	if buf == nil {
		buf = d.lastIDBuf[:0]
	}
	d.lastID = keyenc.AppendValue(buf, id)
}

func (d *DocIter) lastStillLive() bool {
	if d.lastID == nil {
		return true
	}
	raw, err := d.reader.Get(appendDocKey(d.keyBuf[:0], d.c.meta().ID, d.lastID))
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	if err != nil {
		d.err = fmt.Errorf("docstore: fetch document: %w", err)
		return false
	}
	_, keep := d.accept(raw)
	d.Stats.DocsExamined--
	return keep
}

// Lean keeps of the plan only what the rest of the scan reads, for a scan
// a cursor goes on with: a cursor left open holds neither the bounds and predicates kept for explain nor
// the ids and key ranges already read (an $in of a million values would
// otherwise stay whole until the cursor closes).
func (d *DocIter) Lean() {
	p := d.plan
	lp := &Plan{Kind: p.Kind, Index: p.Index, SortProvided: p.SortProvided, Reverse: p.Reverse, idScan: p.idScan}
	switch p.Kind {
	case IDLookup:
		d.rest = packKeys(d.remainingIDs())
	case IndexScan:
		d.restRanges = packRanges(d.remainingRanges())
	}
	d.plan, d.next, d.ranges = lp, 0, nil // the ranges left are in restRanges
	d.filter = d.filter.Lean()            // the filter, not the command's document it came from
}

// keyList is a list of keys in one allocation, 4 bytes of overhead a key.
type keyList struct {
	buf  []byte
	ends []uint32
}

func packKeys(keys [][]byte) *keyList {
	size := 0
	for _, k := range keys {
		size += len(k)
	}
	l := &keyList{buf: make([]byte, 0, size), ends: make([]uint32, len(keys))}
	for i, k := range keys {
		l.buf = append(l.buf, k...)
		l.ends[i] = uint32(len(l.buf))
	}
	return l
}

func (l *keyList) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.buf[start:l.ends[i]:l.ends[i]]
}

// remainingIDs are the ids of an IDLookup not read yet.
func (d *DocIter) remainingIDs() [][]byte {
	if d.rest == nil {
		return d.plan.ids[d.next:]
	}
	out := make([][]byte, 0, len(d.rest.ends)-d.next)
	for i := d.next; i < len(d.rest.ends); i++ {
		out = append(out, d.rest.key(i))
	}
	return out
}

// remainingRanges are the key ranges of an index scan not opened yet, in
// the plan's order.
func (d *DocIter) remainingRanges() []keyRange {
	n := d.rangeCount()
	out := make([]keyRange, 0, n-d.next)
	lo, hi := d.next, n
	if d.plan.Reverse {
		lo, hi = 0, n-d.next
	}
	for i := lo; i < hi; i++ {
		out = append(out, d.rangeAt(i))
	}
	return out
}

// ExpiredNow reports whether doc has expired by now under exact expiry
// (always false when expiry lags, as in MongoDB): for documents a cursor
// holds past their scan, such as the results of a blocking sort.
func (c *Collection) ExpiredNow(doc bson.D) bool { return c.expiredNow(doc) }

// endedInterrupted makes a scan that reached its end after its context
// ended report that instead: a filter's $expr interrupted by the context
// counts as no match, and the scan must not pass that off as its result.
func (d *DocIter) endedInterrupted() {
	if d.err == nil && d.ctx != nil && d.ctx.Err() != nil {
		d.err = fmt.Errorf("docstore: scan: %w", d.ctx.Err())
	}
}
