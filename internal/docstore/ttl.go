package docstore

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expiryflight"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// ExpireResult reports one batch of TTL deletions.
type ExpireResult struct {
	Deleted     int
	DeletedKeys int
	// Read counts the deleted documents that had to be read first: their
	// TTL entry had no deletion record fit for today's indexes.
	Read int
	// More is true when the batch stopped at its limit with expired
	// documents left.
	More bool
	// Scattered is true when the batch's _ids reach below the highest of
	// the previous batch of the pass: documents expiring out of _id order
	// (sessions touched at random), whose deletions land all over the
	// storage engine's memtable. Bigger batches make each of those
	// cheaper; in _id order the size makes no difference.
	Scattered bool
	// Trimmed counts the documents an expireElements pass rewrote
	// without their expired elements (elements.go).
	Trimmed int
	// StaleEntries counts the loose TTL entries deleted without their
	// document: stale ones a touch left, or of documents gone
	// (ttlloose.go).
	StaleEntries int
	// Expiries holds, for each document taken, the expiry its entry gave
	// (unix nanoseconds): with the batch's end, how late it was deleted.
	Expiries []int64
	// Applied is set for a batch still in flight (a replica set's compact
	// expiries): it returns once the batch is applied, with its failure.
	Applied func() error
}

// TTLIndexes returns the names of the collection's ready TTL indexes.
func (c *Collection) TTLIndexes() []string {
	var out []string
	for _, ix := range c.state.Load().ttl {
		out = append(out, ix.def.Name)
	}
	return out
}

func (st *collState) ttlIndex(name string) *indexState {
	for _, ix := range st.ttl {
		if ix.def.Name == name {
			return ix
		}
	}
	return nil
}

// dateBracket is the key range of an index's BSON-date entries: dates sort
// together, so the earliest expiry is the first (or, descending, last) one.
func (ix *indexState) dateBracket() (lo, hi []byte) {
	minDate := bson.DateTime(math.MinInt64)
	next := bson.Timestamp{}
	if ix.def.Fields[0].Desc {
		lo = keyenc.AppendValueDesc(append([]byte(nil), ix.prefix...), next)
		hi = prefixEnd(keyenc.AppendValueDesc(append([]byte(nil), ix.prefix...), minDate))
		return lo, hi
	}
	lo = keyenc.AppendValue(append([]byte(nil), ix.prefix...), minDate)
	hi = keyenc.AppendValue(append([]byte(nil), ix.prefix...), next)
	return lo, hi
}

// entryDate decodes the date at the start of an index entry key.
func (ix *indexState) entryDate(key []byte) (bson.DateTime, bool) {
	return ix.keyDate(key[len(ix.prefix):])
}

// keyDate decodes the date at the start of an index key without its
// prefix.
func (ix *indexState) keyDate(key []byte) (bson.DateTime, bool) {
	return keyenc.DecodeDate(key, ix.def.Fields[0].Desc)
}

// ttlCursor walks an index's date entries from the earliest date on.
type ttlCursor struct {
	ix *indexState
	it storage.Iterator
	ok bool
}

// openTTLCursor positions at the earliest date entry, or just past after
// when a previous batch stopped there.
func (c *Collection) openTTLCursor(ix *indexState, after []byte) (*ttlCursor, error) {
	lo, hi := ix.dateBracket()
	it, err := c.store.eng.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	tc := &ttlCursor{ix: ix, it: it}
	desc := ix.def.Fields[0].Desc
	switch {
	case after == nil && desc:
		tc.ok = it.Last()
	case after == nil:
		tc.ok = it.First()
	case desc:
		tc.ok = it.SeekLT(after)
	default:
		if tc.ok = it.SeekGE(after); tc.ok && bytes.Equal(it.Key(), after) {
			tc.advance()
		}
	}
	return tc, nil
}

func (tc *ttlCursor) advance() {
	if tc.ix.def.Fields[0].Desc {
		tc.ok = tc.it.Prev()
	} else {
		tc.ok = tc.it.Next()
	}
}

// NextExpiry returns the earliest time at which a document of the
// collection expires, read from the first date entry of each TTL index: no
// scan of live documents is needed, whatever their number.
func (c *Collection) NextExpiry() (time.Time, bool, error) {
	var best time.Time
	found := false
	for _, ix := range c.state.Load().ttl {
		tc, err := c.openTTLCursor(ix, ix.ttlSeekKey(ix.progress.Start()))
		if err != nil {
			return best, found, err
		}
		if tc.ok {
			if d, ok := ix.entryDate(tc.it.Key()); ok {
				at := ix.expiry(d)
				if !found || at.Before(best) {
					best, found = at, true
				}
			}
		}
		tc.it.Close()
	}
	return best, found, nil
}

// ExpiryPass deletes, batch by batch, the documents a TTL index says had
// expired at the pass's time. Each batch starts after the last entry the
// previous one visited, and the pass starts where the previous pass of
// the index stopped (see ttlmark), so no batch steps again over the
// deletion tombstones of documents already gone.
type ExpiryPass struct {
	c     *Collection
	index string
	ix    *indexState
	now   time.Time
	// cutoff is the latest date of an entry expired as of now.
	cutoff bson.DateTime
	// begun is the progress mark the pass started from; left is the
	// earliest date of an entry the pass left behind so far.
	begun, left int64
	after       []byte // the last entry visited; nil before the first batch
	// lastMax is the highest _id the previous batch took (nil: none).
	lastMax []byte
	done    bool
}

// maxBatchesInFlight bounds an index's expiry batches proposed and not
// yet applied: each waits for its replication round trip while the next
// is gathered, so deletion keeps up with several batches per round trip.
const maxBatchesInFlight = 4

// BeginExpiry starts a pass over the named TTL index as of now.
func (c *Collection) BeginExpiry(index string, now time.Time) *ExpiryPass {
	if r := c.store.resident; r != nil {
		// The monitor wakes at the earliest expiry: what expired leaves
		// the cache now, in shards no read touched since.
		r.Sweep()
	}
	p := &ExpiryPass{c: c, index: index, now: now, left: math.MaxInt64}
	if p.ix = c.state.Load().ttlIndex(index); p.ix != nil {
		p.begun = p.ix.progress.Begin()
		p.cutoff = bson.NewDateTimeFromTime(now.Add(-time.Duration(p.ix.def.ExpireAfter) * time.Second))
	}
	return p
}

// Next deletes, in one atomic batch, up to limit expired documents. Deletion
// takes the same path as a user delete: every index entry of each
// document goes with it. res.More is false once the pass is over.
//
// The batch first try-locks every lock stripe of the collection, then
// walks the index: what it reads is then what it deletes, with no second
// look. A batch of hundreds of documents holds every stripe anyway. A
// document whose stripe a client holds is left for the next pass, which
// the monitor schedules at once because that document is then the next
// expiry.
func (p *ExpiryPass) Next(limit int) (ExpireResult, error) {
	if p.ix == nil {
		p.done = true
		return ExpireResult{}, nil
	}
	// The slot is taken before the locks: waiting for one holds up no
	// writer.
	slots := p.ix.progress.Slots()
	slots <- struct{}{}
	res, err := p.next(limit)
	if res.Applied == nil {
		<-slots // nothing of it in flight
	}
	if err != nil || res.More || p.done {
		return res, err
	}
	p.done = true
	p.ix.progress.Finish(p.begun, p.left)
	return res, nil
}

// next deletes one batch, under the collection's locks. It reports
// res.More false, with p.done unset, when the pass reached its end; a
// batch it left in flight has res.Applied set.
func (p *ExpiryPass) next(limit int) (ExpireResult, error) {
	c := p.c
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	// A pass over an index that changed since it began ends: the new
	// index state starts from its earliest entry anyway.
	if p.done || p.ix == nil || c.dropped.Load() || c.state.Load().ttlIndex(p.index) != p.ix {
		p.done = true
		return ExpireResult{}, nil
	}
	l := &lockSet{c: c}
	defer l.release()
	l.lockForPass()
	t := c.newTx(l)
	if p.heldByOwnership(t) {
		t.abort()
		return ExpireResult{}, nil
	}
	t.sortDeletes, t.deleteHint = true, min(limit, 1024)
	walk := p.walk
	if p.ix.def.ExpireElements {
		walk = p.walkElements
	}
	res, err := walk(t, limit)
	if err != nil {
		t.abort()
		return ExpireResult{}, err
	}
	res.DeletedKeys = t.keysRemoved
	if t.onlyCompact(res) {
		return p.propose(t, res)
	}
	if err := t.commit(WriteOptions{}); err != nil {
		return ExpireResult{}, fmt.Errorf("docstore: expire %s: %w", c.Namespace(), err)
	}
	return res, nil
}

// propose hands a batch of compact expiries on without waiting for its
// apply: its documents stay in the collection's in flight until then, and
// the index's slot stays taken. The pass goes on past them; if the batch
// fails, the earliest date it held is announced, so that a later pass
// starts from there again.
func (p *ExpiryPass) propose(t *tx, res ExpireResult) (ExpireResult, error) {
	wait, err := t.commitCompact()
	if err != nil {
		return ExpireResult{}, fmt.Errorf("docstore: expire %s: %w", p.c.Namespace(), err)
	}
	b := expiryflight.NewBatch()
	ids, low, progress := t.compactIDs, t.compactLow, p.ix.progress
	p.c.inFlight.Add(ids, b)
	go func() {
		err := wait()
		if err != nil {
			progress.Announce(low)
		} else {
			p.c.stampExpired(ids)
		}
		p.c.inFlight.Finish(ids, b, err)
		<-progress.Slots()
	}()
	res.Applied = b.Wait
	return res, nil
}

// takeable reports whether the pass may take the document id now: it
// holds the document's stripe, and no batch in flight deletes it already.
func (p *ExpiryPass) takeable(t *tx, id []byte) bool {
	return t.locks.stripes[p.c.stripeOf(id)] && p.c.inFlight.BatchOf(id) == nil
}

// openCursor opens the pass's cursor on its index's dates, from the last
// entry visited (or the progress mark it began from).
func (p *ExpiryPass) openCursor() (*ttlCursor, error) {
	after := p.after
	if after == nil {
		after = p.ix.ttlSeekKey(p.begun)
	}
	return p.c.openTTLCursor(p.ix, after)
}

// expiredEntry is the date of tc's entry if it has expired as of the
// pass; otherwise false, the walk ends there, and an unexpired date
// joins p.left.
func (p *ExpiryPass) expiredEntry(tc *ttlCursor) (bson.DateTime, bool) {
	d, ok := p.ix.entryDate(tc.it.Key())
	if ok && d > p.cutoff {
		p.left = min(p.left, int64(d))
		return d, false
	}
	return d, ok
}

// walk goes on from the last entry visited and deletes, into t, up to
// limit documents whose entries have expired: by their deletion records,
// or by reading those without one. It stops at the limit (res.More), at
// the first unexpired entry (its date joins p.left) or at the end of the
// index's dates.
func (p *ExpiryPass) walk(t *tx, limit int) (res ExpireResult, err error) {
	ix := p.ix
	tc, err := p.openCursor()
	if err != nil {
		return res, err
	}
	defer tc.it.Close()
	var seen map[string]bool // the documents taken that have several entries here
	var unread [][]byte
	var ids []byte // one buffer for unread's ids
	var loose looseVisits
	var span idSpan
	for ; tc.ok; tc.advance() {
		d, ok := p.expiredEntry(tc)
		if !ok {
			break
		}
		if ix.clustered {
			stop, err := p.takeClustered(t, tc, d, &res, limit, &span)
			if err != nil {
				return res, err
			}
			if stop {
				break
			}
			continue
		}
		value := tc.it.Value()
		id, rec, _ := ttlentry.Split(tc.it.Key(), value)
		if !ttlentry.OnlyEntry(value) && seen[string(id)] {
			continue // a later date of an array already taken
		}
		if res.Deleted+len(unread)+len(loose.ids) == limit {
			res.More = true
			break
		}
		p.after = append(p.after[:0], tc.it.Key()...)
		if !p.takeable(t, id) {
			p.left = min(p.left, int64(d)) // busy: the next pass comes back
			continue
		}
		if ttlentry.IsLoose(value) {
			loose.add(tc.it.Key(), id) // judged against its document below
			continue
		}
		span.add(id)
		res.Expiries = append(res.Expiries, ix.expiry(d).UnixNano())
		if !ttlentry.OnlyEntry(value) {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[string(id)] = true
		}
		if rec != nil && t.expireCompact(tc.it.Key(), id, rec, d) {
			res.Deleted++
			continue
		}
		if rec != nil {
			done, err := t.removeByRecord(id, rec, ix, ix.expiry(d).UnixNano())
			if err != nil {
				return res, err
			}
			if done {
				if err := t.emitExpiryByID(id, ix, d); err != nil {
					return res, err
				}
				res.Deleted++
				continue
			}
		}
		var cp []byte
		ids, cp = appendCopy(ids, id)
		unread = append(unread, cp)
	}
	if err := tc.it.Error(); err != nil {
		return res, err
	}
	res.Scattered = span.reachesBelow(p.lastMax)
	if span.highest != nil {
		p.lastMax = span.highest
	}
	slices.SortFunc(unread, bytes.Compare)
	if err := p.c.removeRead(t, ix, unread, p.now, &res, &p.left); err != nil {
		return res, err
	}
	return res, p.c.removeLoose(t, ix, &loose, p.now, &res, &p.left)
}

// idSpan follows the lowest and highest _id a batch takes.
type idSpan struct{ lowest, highest []byte }

func (s *idSpan) add(id []byte) {
	if s.lowest == nil || bytes.Compare(id, s.lowest) < 0 {
		s.lowest = append(s.lowest[:0], id...)
	}
	if bytes.Compare(id, s.highest) > 0 {
		s.highest = append(s.highest[:0], id...)
	}
}

// reachesBelow reports whether the span's lowest _id is below prevHighest (nil:
// no previous batch): the batch's documents are scattered (see
// ExpireResult.Scattered).
func (s *idSpan) reachesBelow(prevHighest []byte) bool {
	return prevHighest != nil && s.lowest != nil && bytes.Compare(s.lowest, prevHighest) < 0
}

// removeRead deletes the expired documents among ids (sorted, their
// stripes held) after reading them.
func (c *Collection) removeRead(t *tx, ix *indexState, ids [][]byte, now time.Time, res *ExpireResult, left *int64) error {
	docs, err := c.loadMany(ids)
	if err != nil {
		return err
	}
	for _, old := range docs {
		// Re-check the whole document: its entry was there under the
		// lock, so it has expired unless the index and the document
		// disagree.
		expired, err := c.storedExpired(old, now)
		if err != nil {
			return err
		}
		if !expired {
			*left = math.MinInt64 // let the next pass start over
			continue
		}
		if err := t.expireRead(ix, old); err != nil {
			return err
		}
		res.Deleted++
		res.Read++
	}
	return nil
}

// expireRead removes a document the TTL monitor read and found expired,
// with its expiry event: by the pass's index when the document has a date
// there, else by whichever TTL index expired it.
func (t *tx) expireRead(ix *indexState, old *stored) error {
	if t.eventBatch() == nil {
		return t.removeDoc(old)
	}
	at, ok, err := old.expiresAt(ix)
	if err != nil {
		return err
	}
	if ok {
		if err := t.removeDoc(old); err != nil {
			return err
		}
		t.emitExpiry(old.idEnc, old.raw, ix, at.UnixMilli())
		return nil
	}
	if old.doc == nil {
		if err := old.decode(); err != nil {
			return err
		}
	}
	return t.expireDoc(old)
}

// expiresAt is ix.expiresAt for a stored document, read from its raw BSON
// when ix allows (the monitor's read is discarded once the event has the
// raw document, so decoding it would be garbage alone), else decoded.
func (d *stored) expiresAt(ix *indexState) (time.Time, bool, error) {
	if d.doc == nil {
		if at, found, ok := ix.rawExpiresAt(d.raw); ok {
			return at, found, nil
		}
		if err := d.decode(); err != nil {
			return time.Time{}, false, err
		}
	}
	at, found := ix.expiresAt(d.doc)
	return at, found, nil
}

// storedExpired reports whether a stored document has expired at now,
// reading its TTL fields from raw BSON when every TTL index is simple and
// holds a scalar there, else from the decoded document.
func (c *Collection) storedExpired(d *stored, now time.Time) (bool, error) {
	if d.doc == nil {
		if expired, ok := c.rawExpired(d.raw, now); ok {
			return expired, nil
		}
		if err := d.decode(); err != nil {
			return false, err
		}
	}
	return c.Expired(d.doc, now), nil
}

// rawExpired applies Expired's rule to raw BSON: expired when any TTL
// index's date plus its expireAfterSeconds is at or before now. ok is
// false where an index's rawExpiresAt cannot tell.
func (c *Collection) rawExpired(raw []byte, now time.Time) (expired, ok bool) {
	for _, ix := range c.state.Load().ttl {
		at, found, ok := ix.rawExpiresAt(raw)
		if !ok {
			return false, false
		}
		if found && !at.After(now) {
			return true, true
		}
	}
	return false, true
}

// loadMany reads the documents with the given encoded _ids (sorted, their
// stripes held) through one iterator: seeking forward in key order reuses
// the index and data blocks a point Get per document would look up again.
// Absent documents are skipped.
func (c *Collection) loadMany(ids [][]byte) ([]*stored, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	prefix := docPrefix(c.meta().ID)
	it, err := c.store.eng.NewIter(docKey(c.meta().ID, ids[0]), prefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	docs := make([]stored, 0, len(ids))
	var raws []byte // one buffer for the batch's documents
	key := prefix
	seek := docSeeker{it: it, stepping: true}
	for _, id := range ids {
		key = append(key[:len(prefix)], id...)
		if !seek.find(key) {
			continue
		}
		var raw []byte
		raws, raw = appendCopy(raws, it.Value())
		docs = append(docs, stored{idEnc: id, raw: raw}) // decoded only if needed
	}
	out := make([]*stored, len(docs))
	for i := range docs {
		out[i] = &docs[i]
	}
	return out, it.Error()
}

// docSeeker finds documents in key order through one iterator. When the
// documents of a batch are neighbours (ids given in expiry order, as
// ObjectIds and counters often are), one step from the previous one finds
// the next, which is cheaper than a seek; once a step falls short it stops
// trying, so scattered ids cost no more than seeks.
type docSeeker struct {
	it       storage.Iterator
	stepping bool
}

// find positions at key and reports whether it is there.
func (s *docSeeker) find(key []byte) bool {
	if s.stepping && s.it.Valid() {
		c := bytes.Compare(s.it.Key(), key)
		if c < 0 {
			if !s.it.Next() {
				return false
			}
			c = bytes.Compare(s.it.Key(), key)
		}
		switch {
		case c == 0:
			return true
		case c > 0:
			return false
		}
		s.stepping = false
	}
	return s.it.SeekGE(key) && bytes.Equal(s.it.Key(), key)
}

// appendCopy appends b to buf and returns buf and the copy, capped so that
// later appends never write into it. Earlier copies stay valid when buf
// grows: they keep the array they were made in.
func appendCopy(buf, b []byte) (grown, cp []byte) {
	if cap(buf)-len(buf) < len(b) {
		buf = make([]byte, 0, max(2*cap(buf), 64*len(b), 4096))
	}
	start := len(buf)
	buf = append(buf, b...)
	return buf, buf[start:len(buf):len(buf)]
}
