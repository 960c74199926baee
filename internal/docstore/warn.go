package docstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// Expiry warnings. A TTL index with expiryWarningSeconds N makes the
// collection's change streams carry an "expiring" event N seconds before
// each document expires. A pass walks the index's date entries whose
// expiry has entered the window (warnedTo, now + N] since the last pass
// and writes one event per document, in one batch with no other writes.
// A document touched before its warning has a new entry, warned when the
// new expiry enters the window; one deleted first has none.
//
// Each batch of warnings, and a pass with none about once a second,
// stores how far the window had got (a warnedKey, replicated like the
// warnings), so that the first pass after
// a restart or a promotion goes on from there: the documents whose
// warning fell due meanwhile and that have not expired yet are warned
// then, late, and none twice. The first pass of a new index, or of one
// whose expireAfterSeconds changed since, only opens the window:
// documents already inside it are not warned.

// WarnExpiring runs a warning pass over each TTL index of the collection
// that asks for warnings, as of now, and reports how many it sent.
func (c *Collection) WarnExpiring(now time.Time) (int, error) {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	if c.dropped.Load() {
		return 0, nil
	}
	sent := 0
	for _, ix := range c.state.Load().ttl {
		if ix.def.WarnBefore <= 0 {
			continue
		}
		n, err := c.warnIndex(ix, now)
		if err != nil {
			return sent, fmt.Errorf("docstore: expiry warnings of %s: %w", c.Namespace(), err)
		}
		sent += n
	}
	return sent, nil
}

// warnIndex warns of the documents of ix whose expiry entered the window.
// It holds the stripes it can take, so that no touch commits between its
// reading an entry and its warning; it stops before a document whose
// stripe a client holds, and the next pass goes on from there.
func (c *Collection) warnIndex(ix *indexState, now time.Time) (int, error) {
	ix.warnMu.Lock()
	defer ix.warnMu.Unlock()
	horizon := now.Add(time.Duration(ix.def.WarnBefore) * time.Second).UnixMilli()
	from := ix.warnedTo.Load()
	if from == 0 {
		stored, ok, err := c.storedWarnedTo(ix)
		if err != nil || !ok {
			ix.warnedTo.Store(horizon) // stored by the next pass
			return 0, err
		}
		// Documents that expired meanwhile get their expiry event, not a
		// warning.
		from = max(stored, now.UnixMilli())
		ix.warnedTo.Store(from)
		ix.warnedStored.Store(stored)
	}
	if horizon <= from {
		return 0, nil
	}
	l := &lockSet{c: c}
	defer l.release()
	l.lockForPass()
	t := c.newTx(l)
	defer t.abort()
	reached, n, err := t.warnRange(ix, from, horizon)
	if err != nil || n == 0 && reached-ix.warnedStored.Load() < warnedStoreEvery {
		ix.warnedTo.Store(reached)
		return 0, err
	}
	b := t.b
	if n == 0 {
		// The mark alone: warnings a pass gave up on stay out.
		b = c.store.eng.NewBatch()
		defer b.Close()
	}
	if err := b.Set(warnedKey(c.meta().ID, ix.def.ID), warnedValue(reached, ix.def.ExpireAfter)); err != nil {
		return 0, err
	}
	if err := b.Commit(false); err != nil {
		return 0, err
	}
	ix.warnedTo.Store(reached)
	ix.warnedStored.Store(reached)
	return n, nil
}

// warnedStoreEvery is how far (ms of expiry time) the window may move on
// with no warning to send before its mark is stored anyway: a restart
// then warns at most that much of it again, and passes with nothing to
// send write about once a second.
const warnedStoreEvery = 1000

// warnedValue is a warnedKey's value: how far the warnings of the index
// have got (Unix ms of expiry), and the expireAfterSeconds that mark
// was reached with.
func warnedValue(to, expireAfter int64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(to))
	return binary.BigEndian.AppendUint64(v, uint64(expireAfter))
}

// storedWarnedTo is how far the warnings of ix had got before this
// server's first pass over it; false when never, or when the index's
// expireAfterSeconds has changed since (every expiry moved with it).
func (c *Collection) storedWarnedTo(ix *indexState) (int64, bool, error) {
	v, err := c.store.eng.Get(warnedKey(c.meta().ID, ix.def.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read expiry warnings mark: %w", err)
	}
	if len(v) != 16 || int64(binary.BigEndian.Uint64(v[8:])) != ix.def.ExpireAfter {
		return 0, false, nil
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// warnRange adds a warning to t for each document whose expiry by ix is
// in (from, to]; it returns how far it got and how many it added.
func (t *tx) warnRange(ix *indexState, from, to int64) (int64, int, error) {
	start := ix.ttlSeekKey(from - ix.def.ExpireAfter*1000)
	tc, err := t.c.openTTLCursor(ix, nil)
	if err != nil {
		return from, 0, err
	}
	defer tc.it.Close()
	if start != nil {
		tc.ok = tc.it.SeekGE(start)
	}
	n, lastAt := 0, int64(0)
	for ; tc.ok; tc.advance() {
		d, ok := ix.entryDate(tc.it.Key())
		if !ok {
			continue
		}
		at := ix.expiry(d).UnixMilli()
		if at <= from {
			continue
		}
		if at > to {
			break
		}
		id := ttlentry.ID(tc.it.Key(), tc.it.Value())
		if !t.locks.stripes[t.c.stripeOf(id)] {
			if lastAt == at {
				// Warned of some documents of this millisecond but not
				// this one: the next pass could start neither before
				// them nor after it, so it starts over, none sent.
				return from, 0, tc.it.Error()
			}
			return at - 1, n, tc.it.Error() // busy: the next pass starts here
		}
		doc, err := t.expiresBy(ix, id, tc.it.Value(), at)
		if err != nil {
			return from, 0, err
		}
		if doc != nil {
			exp := changestream.Expiry{Index: ix.def.Name, AfterSecs: ix.def.ExpireAfter, AtMillis: at}
			t.emit(&changestream.Event{Op: changestream.OpExpiring, RawID: rawID(doc.raw), Expired: &exp})
			n, lastAt = n+1, at
		}
	}
	return to, n, tc.it.Error()
}

// expiresBy returns the document id if it expires at at by this entry
// (nil if not): always for a document with one date; for one with
// several (an array), only by the entry of its earliest date. The warning
// reads the document for its exact _id (the entry holds its key
// encoding, in which numbers of every type look alike).
func (t *tx) expiresBy(ix *indexState, id, value []byte, at int64) (*stored, error) {
	d, err := t.c.loadLocked(id)
	if err != nil || d == nil || ttlentry.OnlyEntry(value) {
		return d, err
	}
	when, ok := ix.expiresAt(d.doc)
	if !ok || when.UnixMilli() != at {
		return nil, nil
	}
	return d, nil
}

// lateWarning is a document a write puts with a new expiry by a warning
// index.
type lateWarning struct {
	ix  *indexState
	raw []byte // the document as written
	at  int64  // its expiry by ix, Unix ms
}

// lateMargin widens, beyond now + N, the expiries a committing write
// checks against the window under the index's lock: the window is at
// most a pass's now + N, and a pass would have to run that much later
// than the write's clock reading, between it and the commit, to go past
// one of the others unseen.
const lateMargin = 5 * time.Second

// noteLateWarning notes d, written by t over old (nil: none), for each
// warning index it has an expiry by; a write that leaves the expiry as
// it was has been warned of already, or will be.
func (t *tx) noteLateWarning(d, old *stored) {
	for _, ix := range t.st.ttl {
		if ix.def.WarnBefore <= 0 || ix.warnMu == nil {
			continue
		}
		when, ok := ix.expiresAt(d.doc)
		if !ok {
			continue
		}
		if old != nil {
			if was, had := ix.expiresAt(old.doc); had && was.Equal(when) {
				continue
			}
		}
		t.lateWarnings = append(t.lateWarnings, lateWarning{ix: ix, raw: d.raw, at: when.UnixMilli()})
	}
}

// sendLateWarnings, just before t commits, warns of the noted documents
// that have not expired and whose expiry the window has already passed;
// the pass, which it keeps out until the commit (the returned unlock),
// goes on past the others later. Only a write with an expiry near the
// window takes the lock; indexes are locked in the state's order, so two
// writes never wait for each other.
func (t *tx) sendLateWarnings() (unlock func()) {
	now := t.c.store.clock.Now()
	var locked []*indexState
	for _, ix := range t.st.ttl {
		if t.nearWindow(ix, now) {
			ix.warnMu.Lock()
			locked = append(locked, ix)
		}
	}
	for _, w := range t.lateWarnings {
		if slices.Contains(locked, w.ix) && w.at > now.UnixMilli() && w.at <= w.ix.warnedTo.Load() {
			exp := changestream.Expiry{Index: w.ix.def.Name, AfterSecs: w.ix.def.ExpireAfter, AtMillis: w.at}
			t.emit(&changestream.Event{Op: changestream.OpExpiring, RawID: rawID(w.raw), Expired: &exp})
		}
	}
	return func() {
		for _, ix := range locked {
			ix.warnMu.Unlock()
		}
	}
}

// nearWindow reports whether a noted document of ix expires within its
// lead time and lateMargin of now.
func (t *tx) nearWindow(ix *indexState, now time.Time) bool {
	limit := now.Add(time.Duration(ix.def.WarnBefore)*time.Second + lateMargin).UnixMilli()
	for _, w := range t.lateWarnings {
		if w.ix == ix && w.at <= limit {
			return true
		}
	}
	return false
}
