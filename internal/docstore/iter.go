package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// ScanStats count the work of a scan, for explain's executionStats.
type ScanStats struct {
	KeysExamined int64
	DocsExamined int64
	Returned     int64
	// Seeks is the number of key ranges opened.
	Seeks int64
	// DupsDropped counts index entries of documents already yielded (a
	// multikey document has several).
	DupsDropped int64
	// EOF is set once the scan has run to its end.
	EOF bool
}

// DocIter yields the live documents of a plan that match its filter.
type DocIter struct {
	c      *Collection
	plan   *Plan
	filter *query.Filter
	now    time.Time
	hide   bool // exact expiry in force

	// reader is what the scan reads: the store, or a transaction's view.
	reader storage.Reader
	it     storage.Iterator
	next   int // next range or id
	// firstSeen is the first _id yielded from an index (in firstBuf when
	// it fits), seen the others: a lookup that yields one document makes
	// no map and, for a short _id, no allocation.
	firstSeen []byte
	firstBuf  [24]byte
	hasFirst  bool
	// keyBuf is room for the document key get reads by (Get keeps no
	// reference to it), lastIDBuf for lastID: a point read allocates
	// neither.
	keyBuf    [48]byte
	lastIDBuf [24]byte
	// firstDoc is room for the first document read by key (a point
	// lookup's only one), taken once (read).
	firstDoc     [192]byte
	firstDocRead bool
	// ranges are the plan's key ranges when the plan leaves them to the
	// scan (planRanges), in rangeBuf and keyBytes (through keyRoom) while
	// they fit: an equality's range is then no allocation of its own.
	ranges   []keyRange
	rangeBuf [1]keyRange
	keyBytes [160]byte
	keyRoom  keyRoom
	seen     map[string]struct{}
	Stats    ScanStats
	err      error
	// ctx, when set, ends a long scan early (maxTimeMS, shutdown) even while
	// no document matches.
	ctx context.Context
	// owns, when set (WithOwnership), keeps only the documents a shard
	// owns: a router's read never sees an orphan.
	owns func(bson.D) bool

	// Kept for Refresh: the current range's bounds, whether the reopened
	// iterator already stands on an entry not yet read, and the _id of the
	// last document yielded.
	lo, hi     []byte
	unconsumed bool
	lastID     []byte
	rest       *keyList   // an IDLookup's ids once Lean packed them
	restRanges *rangeList // an index scan's ranges once packed

	// ttlState is the collection state ttlIx was resolved in (ttlIndex).
	ttlState *collState
	ttlIx    *indexState
}

func (d *DocIter) idCount() int {
	if d.rest != nil {
		return len(d.rest.ends)
	}
	return len(d.plan.ids)
}

func (d *DocIter) idAt(i int) []byte {
	if d.rest != nil {
		return d.rest.key(i)
	}
	return d.plan.ids[i]
}

// interruptEvery is how many examined documents pass between context checks.
const interruptEvery = 256

// WithContext makes the scan stop with ctx's error once ctx is done,
// and keep only owned documents when ctx carries an ownership filter.
func (d *DocIter) WithContext(ctx context.Context) *DocIter {
	d.ctx = ctx
	if owns, ok := ctx.Value(ownershipKey{}).(func(bson.D) bool); ok {
		d.owns = owns
	}
	return d
}

type ownershipKey struct{}

// WithOwnership returns a context under which the scans a command opens
// (WithContext) skip the documents owns rejects: a shard member's orphans,
// under a router's versioned command. A scan keeps the filter it started
// with for its whole life, getMores included.
func WithOwnership(ctx context.Context, owns func(bson.D) bool) context.Context {
	return context.WithValue(ctx, ownershipKey{}, owns)
}

// OwnershipOf returns the ownership filter ctx carries (WithOwnership),
// or one that owns every document (as for a nil ctx).
func OwnershipOf(ctx context.Context) func(bson.D) bool {
	if ctx == nil {
		return ownsAll
	}
	if owns, ok := ctx.Value(ownershipKey{}).(func(bson.D) bool); ok {
		return owns
	}
	return ownsAll
}

func ownsAll(bson.D) bool { return true }

// HasOwnership reports whether ctx carries an ownership filter: a count
// under one must scan, since the collection's counter includes orphans.
func HasOwnership(ctx context.Context) bool {
	_, ok := ctx.Value(ownershipKey{}).(func(bson.D) bool)
	return ok
}

func (d *DocIter) interrupted() bool {
	if d.ctx == nil || d.Stats.DocsExamined%interruptEvery != 0 {
		return false
	}
	if err := d.ctx.Err(); err != nil {
		d.err = fmt.Errorf("docstore: scan: %w", err)
		return true
	}
	return false
}

// Scan starts an iterator over the documents plan finds that match f
// (nil matches all). Expired documents are skipped under exact expiry.
func (c *Collection) Scan(plan *Plan, f *query.Filter) *DocIter {
	d := c.newScan(plan, f)
	return &d
}

// newScan is Scan's iterator as a value, for a caller that holds it in
// a struct of its own (IDIter).
func (c *Collection) newScan(plan *Plan, f *query.Filter) DocIter {
	if plan == nil {
		plan = &Plan{Kind: CollScan, SortProvided: true}
	}
	return DocIter{
		c: c, plan: plan, filter: f,
		now:    c.store.clock.Now(),
		hide:   c.store.exactExpiry.Load() && c.HasTTL(),
		reader: c.store.eng,
	}
}

// Plan returns the plan the iterator runs.
func (d *DocIter) Plan() *Plan { return d.plan }

// Next returns the next matching document; ok is false at the end.
func (d *DocIter) Next() (bson.D, bool, error) {
	for d.err == nil && !d.interrupted() {
		raw, ok := d.nextRaw()
		if !ok {
			break
		}
		doc, keep := d.accept(raw)
		if keep {
			d.Stats.Returned++
			d.noteYielded(doc)
			return doc, true, nil
		}
	}
	d.lastID = nil
	d.endedInterrupted()
	d.Stats.EOF = d.err == nil
	return nil, false, d.err
}

func (d *DocIter) accept(raw []byte) (bson.D, bool) {
	d.Stats.DocsExamined++
	doc, err := bsonutil.DecodeD(raw, 0)
	if err != nil {
		d.err = fmt.Errorf("docstore: decode stored document: %w", err)
		return nil, false
	}
	if d.hide && d.c.Expired(doc, d.now) {
		return nil, false
	}
	if d.hide {
		doc = d.c.liveElements(doc, d.now)
	}
	if d.owns != nil && !d.owns(doc) {
		return nil, false
	}
	if d.filter == nil {
		return doc, true
	}
	// A $expr that fails to evaluate fails the query, as in MongoDB; it
	// does not merely leave the document out.
	ok, err := d.filter.MatchErr(doc)
	if err != nil {
		d.err = err
	}
	return doc, ok && err == nil
}

func (d *DocIter) nextRaw() ([]byte, bool) {
	switch d.plan.Kind {
	case IDLookup:
		return d.nextID()
	case IndexScan:
		return d.nextIndexed()
	}
	return d.nextCollScan()
}

func (d *DocIter) nextCollScan() ([]byte, bool) {
	if d.it == nil {
		p := docPrefix(d.c.meta().ID)
		if !d.open(p, prefixEnd(p)) {
			return nil, false
		}
		return d.current(d.first())
	}
	return d.current(d.step())
}

// first and step move in the plan's direction.
func (d *DocIter) first() bool {
	if d.plan.Reverse {
		return d.it.Last()
	}
	return d.it.First()
}

func (d *DocIter) step() bool {
	if d.unconsumed {
		d.unconsumed = false
		return d.it.Valid()
	}
	if d.plan.Reverse {
		return d.it.Prev()
	}
	return d.it.Next()
}

func (d *DocIter) current(ok bool) ([]byte, bool) {
	if !ok {
		d.err = d.it.Error()
		return nil, false
	}
	return d.it.Value(), true
}

func (d *DocIter) open(lo, hi []byte) bool {
	it, err := d.reader.NewIter(lo, hi)
	if err != nil {
		d.err = fmt.Errorf("docstore: open scan: %w", err)
		return false
	}
	d.it, d.lo, d.hi = it, lo, hi
	d.Stats.Seeks++
	return true
}

func (d *DocIter) nextID() ([]byte, bool) {
	for d.next < d.idCount() {
		id := d.idAt(d.next)
		d.next++
		d.Stats.KeysExamined++
		if raw, ok := d.get(id); ok {
			return raw, true
		}
		if d.err != nil {
			return nil, false
		}
	}
	return nil, false
}

func (d *DocIter) get(idEnc []byte) ([]byte, bool) {
	raw, err := d.read(appendDocKey(d.keyBuf[:0], d.c.meta().ID, idEnc))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		d.err = fmt.Errorf("docstore: fetch document: %w", err)
		return nil, false
	}
	return raw, true
}

// read is d.reader.Get of key, the first document found into firstDoc
// when the reader can append (storage.AppendGetter) and it fits. The room
// is taken once and never written again: the document decoded from it
// may alias it, and the scan's caller keeps that.
func (d *DocIter) read(key []byte) ([]byte, error) {
	ag, ok := d.reader.(storage.AppendGetter)
	if !ok || d.firstDocRead {
		return d.reader.Get(key)
	}
	raw, err := ag.AppendGet(d.firstDoc[:0], key)
	if err != nil {
		return nil, err
	}
	d.firstDocRead = true
	return raw[:len(raw):len(raw)], nil
}

// markSeen records an _id and reports whether it was yielded before: a
// multikey document has several entries in one index.
func (d *DocIter) markSeen(idEnc []byte) bool {
	switch {
	case !d.hasFirst:
		d.firstSeen, d.hasFirst = append(d.firstBuf[:0], idEnc...), true
		return false
	case bytes.Equal(d.firstSeen, idEnc):
		return true
	case d.seen == nil:
		d.seen = map[string]struct{}{}
	}
	if _, ok := d.seen[string(idEnc)]; ok {
		return true
	}
	d.seen[string(idEnc)] = struct{}{}
	return false
}

// nextIndexed yields the document of the next index entry. On the _id
// index the entries are the documents themselves.
func (d *DocIter) nextIndexed() ([]byte, bool) {
	for d.err == nil {
		if !d.advanceIndex() {
			return nil, false
		}
		d.Stats.KeysExamined++
		if d.plan.idScan {
			return d.it.Value(), true
		}
		if d.staleEntry() || d.expiredEntry() {
			continue
		}
		idEnc := ttlentry.ID(d.it.Key(), d.it.Value())
		if d.markSeen(idEnc) {
			d.Stats.DupsDropped++
			continue
		}
		if raw, ok := d.get(idEnc); ok {
			return raw, true
		}
	}
	return nil, false
}

// staleEntry reports whether the index entry the scan stands on is a
// touch's stale one (ttlloose.go), which the scan passes over: its key is
// no longer the document's, so it would match a range the document does
// not, or yield the document out of the index's order.
func (d *DocIter) staleEntry() bool {
	if !ttlentry.IsLoose(d.it.Value()) {
		return false
	}
	ix := d.c.state.Load().indexByID(d.plan.Index.ID)
	skip, err := d.c.skipLoose(ix, d.it.Key(), d.it.Value(), d.reader)
	if err != nil {
		d.err = err
	}
	return skip
}

// expiredEntry reports whether the index entry the scan stands on shows
// its document expired without reading it. On a TTL index a record
// entry (not loose) is the document's own: its date is one of the
// document's dates at the path, and the document expires by its earliest
// (ExpiresAt), so an entry dated at or before now − expireAfterSeconds
// means the document is hidden, as the monitor trusts it to be. A range
// read over a backlog of expired documents then costs a key each, not a
// document read each. A loose entry may be stale (its document touched
// since), so staleEntry reads its document first and this holds for the
// current one alone.
func (d *DocIter) expiredEntry() bool {
	if !d.hide {
		return false
	}
	ix := d.ttlIndex()
	if ix == nil {
		return false
	}
	date, ok := ix.entryDate(d.it.Key())
	return ok && !ix.expiry(date).After(d.now)
}

// ttlIndex returns the scan's index when it expires documents (a TTL
// index that does not expire elements alone), nil otherwise, as the
// collection's current state defines it: a collMod of expireAfterSeconds
// mid-scan is seen at the next entry, as Expired sees it.
func (d *DocIter) ttlIndex() *indexState {
	st := d.c.state.Load()
	if st == d.ttlState {
		return d.ttlIx
	}
	d.ttlState, d.ttlIx = st, nil
	ix := st.indexByID(d.plan.Index.ID)
	if ix != nil && ix.progress != nil && !ix.clustered && !ix.def.ExpireElements {
		d.ttlIx = ix
	}
	return d.ttlIx
}

// advanceIndex moves to the next index entry, opening ranges in turn (in
// reverse order when the plan reads backwards).
func (d *DocIter) advanceIndex() bool {
	for {
		if d.it != nil {
			if d.step() {
				return true
			}
			if !d.closeRange() {
				return false
			}
		}
		r, ok := d.nextRange()
		if !ok || !d.open(r.lo, r.hi) {
			return false
		}
		if d.first() {
			return true
		}
		if !d.closeRange() {
			return false
		}
	}
}

// closeRange ends the current range; false if its iterator failed.
func (d *DocIter) closeRange() bool {
	d.err = d.it.Error()
	_ = d.it.Close()
	d.it = nil
	return d.err == nil
}

func (d *DocIter) nextRange() (keyRange, bool) {
	n := d.rangeCount()
	if d.next >= n {
		return keyRange{}, false
	}
	i := d.next
	if d.plan.Reverse {
		i = n - 1 - d.next
	}
	d.next++
	return d.rangeAt(i), true
}

func (d *DocIter) rangeCount() int {
	if d.restRanges != nil {
		return d.restRanges.len()
	}
	return len(d.planRanges())
}

func (d *DocIter) rangeAt(i int) keyRange {
	if d.restRanges != nil {
		return d.restRanges.at(i)
	}
	return d.planRanges()[i]
}

// planRanges are the plan's key ranges: its own, or, when it leaves them
// to the scan (Plan.lazyRanges), made once from its bounds in d's room.
func (d *DocIter) planRanges() []keyRange {
	p := d.plan
	if !p.lazyRanges {
		return p.ranges
	}
	if d.ranges == nil {
		d.keyRoom = keyRoom{spare: d.keyBytes[:0]}
		d.ranges = keyRanges(d.rangeBuf[:0:1], &d.keyRoom, p.rangePrefix, p.bounds)
	}
	return d.ranges
}

// Close releases the iterator.
func (d *DocIter) Close() error {
	if d.it != nil {
		err := d.it.Close()
		d.it = nil
		return err
	}
	return nil
}
