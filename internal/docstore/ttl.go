package docstore

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
)

// ExpireResult reports one batch of TTL deletions.
type ExpireResult struct {
	Deleted     int
	DeletedKeys int
	// More is true when the batch stopped at its limit with expired
	// documents left.
	More bool
	// Resume is the last index entry the batch visited: the next batch of
	// the same pass starts after it instead of stepping again over the
	// entries (and deletion tombstones) already behind.
	Resume []byte
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
	rest := key[len(ix.prefix):]
	var v any
	var err error
	if ix.def.Fields[0].Desc {
		v, _, err = keyenc.DecodeValueDesc(rest)
	} else {
		v, _, err = keyenc.DecodeValue(rest)
	}
	d, ok := v.(bson.DateTime)
	return d, ok && err == nil
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
		tc, err := c.openTTLCursor(ix, nil)
		if err != nil {
			return best, found, err
		}
		if tc.ok {
			if d, ok := ix.entryDate(tc.it.Key()); ok {
				at := time.UnixMilli(int64(d)).Add(time.Duration(ix.def.ExpireAfter) * time.Second)
				if !found || at.Before(best) {
					best, found = at, true
				}
			}
		}
		tc.it.Close()
	}
	return best, found, nil
}

// ExpireBatch deletes, in one atomic batch, up to limit documents that the
// named TTL index says expired at now. Deletion takes the same path as a
// user delete: every index entry of each document goes with it.
//
// after is the Resume of the previous batch of the same pass (nil to start
// from the earliest entry).
func (c *Collection) ExpireBatch(index string, now time.Time, limit int, after []byte) (ExpireResult, error) {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	var res ExpireResult
	st := c.state.Load()
	ix := st.ttlIndex(index)
	if ix == nil || c.dropped.Load() {
		return res, nil
	}
	ids, resume, err := c.expiredIDs(ix, now, limit, after)
	if err != nil {
		return res, err
	}
	res.More, res.Resume = resume != nil, resume
	l := &lockSet{c: c}
	defer l.release()
	return c.removeExpired(l, ids, now, res)
}

// expiredIDs collects up to limit documents whose entries in ix have
// expired, starting after the given key. resume is the last entry taken
// when the limit stopped the walk with entries left, else nil.
func (c *Collection) expiredIDs(ix *indexState, now time.Time, limit int, after []byte) (ids [][]byte, resume []byte, err error) {
	cutoff := bson.NewDateTimeFromTime(now.Add(-time.Duration(ix.def.ExpireAfter) * time.Second))
	tc, err := c.openTTLCursor(ix, after)
	if err != nil {
		return nil, nil, err
	}
	defer tc.it.Close()
	seen := map[string]bool{}
	var last []byte
	for ; tc.ok; tc.advance() {
		d, ok := ix.entryDate(tc.it.Key())
		if !ok || d > cutoff {
			break
		}
		id := string(tc.it.Value())
		if seen[id] {
			continue
		}
		if len(ids) == limit {
			return ids, last, nil
		}
		seen[id] = true
		ids = append(ids, []byte(id))
		last = append(last[:0], tc.it.Key()...)
	}
	return ids, nil, tc.it.Error()
}

// removeExpired deletes the documents it can lock at once; one that a
// client is writing right now is left for the next pass, which the monitor
// schedules at once because that document is then the next expiry.
func (c *Collection) removeExpired(l *lockSet, ids [][]byte, now time.Time, res ExpireResult) (ExpireResult, error) {
	t := c.newTx(l)
	for _, id := range ids {
		if !l.tryStripe(c.stripeOf(id)) {
			continue
		}
		old, err := c.loadLocked(id)
		if err != nil {
			t.abort()
			return res, err
		}
		// Re-check the whole document: another TTL index or a newer date in
		// an array may keep it alive.
		if old == nil || !c.Expired(old.doc, now) {
			continue
		}
		if err := t.removeDoc(old); err != nil {
			t.abort()
			return res, err
		}
		res.Deleted++
	}
	res.DeletedKeys = t.keysRemoved
	if err := t.commit(WriteOptions{}); err != nil {
		return ExpireResult{}, fmt.Errorf("docstore: expire %s: %w", c.Namespace(), err)
	}
	return res, nil
}
