package docstore

import (
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// RefreshDivisor sets how stale a refreshOnRead date must be before a read
// writes it: older than now − expireAfterSeconds/RefreshDivisor. So a read
// writes a document at most once per tenth of its idle life, and a
// document read at t lives at least until t + 0.9 × expireAfterSeconds
// (and at most until t + expireAfterSeconds) unless it is read again.
const RefreshDivisor = 10

// RefreshesOnRead reports whether the collection has a ready TTL index
// with refreshOnRead: only then does a read pay for RefreshOnRead.
func (c *Collection) RefreshesOnRead() bool { return len(c.state.Load().refresh) > 0 }

// Refreshed returns doc with every stale refreshOnRead date set to now,
// and whether it set any. A date is refreshed only where the indexed path
// leads through subdocuments to one BSON date (not through an array, not
// another type: those do not make the document expire by a single date
// that a read could move), and only when the document is in the index
// (its partial filter matches). doc itself is not modified.
func (c *Collection) Refreshed(doc bson.D, now time.Time) (bson.D, bool) {
	changed := false
	for _, ix := range c.state.Load().refresh {
		if ix.partial != nil && !ix.partial.Match(doc) {
			continue
		}
		parts := strings.Split(ix.def.Fields[0].Path, ".")
		d, ok := dateAt(doc, parts)
		if !ok || !ix.stale(d, now) {
			continue
		}
		doc, changed = withDate(doc, parts, bson.NewDateTimeFromTime(now)), true
	}
	return doc, changed
}

// stale reports whether date d is old enough for a read at now to move it.
func (ix *indexState) stale(d bson.DateTime, now time.Time) bool {
	slack := time.Duration(ix.def.ExpireAfter) * time.Second / RefreshDivisor
	return time.UnixMilli(int64(d)).Before(now.Add(-slack))
}

// dateAt returns the date at the path parts of doc, through subdocuments.
func dateAt(doc bson.D, parts []string) (bson.DateTime, bool) {
	v, ok := bsonutil.Field(doc, parts[0])
	if !ok {
		return 0, false
	}
	if len(parts) == 1 {
		d, isDate := v.(bson.DateTime)
		return d, isDate
	}
	sub, isDoc := v.(bson.D)
	if !isDoc {
		return 0, false
	}
	return dateAt(sub, parts[1:])
}

// withDate returns a copy of doc with the value at parts (which dateAt
// found) replaced by d; the subdocuments on the path are copied too.
func withDate(doc bson.D, parts []string, d bson.DateTime) bson.D {
	out := append(bson.D(nil), doc...)
	for i := range out {
		if out[i].Key != parts[0] {
			continue
		}
		if len(parts) == 1 {
			out[i].Value = d
		} else {
			out[i].Value = withDate(out[i].Value.(bson.D), parts[1:], d)
		}
		break
	}
	return out
}

// RefreshOnRead is what a read that returns doc to a client does in a
// collection with refreshOnRead indexes: when a date is stale, it writes
// the live document with that date set to now, through the ordinary write
// path (one atomic write like an update with w: 1, an update event in
// change streams, a replicated entry on a primary; on a member that is
// not primary the commit fails with the replica set's not-primary error,
// which the caller may ignore). It returns the document to send: doc with
// the refreshed dates. A document that changed in between is refreshed as
// it is now; one that was deleted or expired in between is left alone.
func (c *Collection) RefreshOnRead(doc bson.D) (bson.D, error) {
	now := c.store.clock.Now()
	out, stale := c.Refreshed(doc, now)
	id, hasID := lookupID(doc)
	if !stale || !hasID {
		return doc, nil
	}
	wrote := false
	// The server moves a date the reader did not write: the document was
	// valid when it was stored, and a validator added since must not make
	// the read fail.
	_, err := c.Modify(id, WriteOptions{BypassValidation: true}, func(cur bson.D) (Change, error) {
		next, ok := bson.D(nil), false
		if cur != nil {
			next, ok = c.Refreshed(cur, now)
		}
		wrote = ok
		if !ok {
			return Change{}, nil
		}
		return Change{Kind: Replace, Doc: next}, nil
	})
	if err != nil {
		return doc, fmt.Errorf("docstore: refresh on read: %w", err)
	}
	if wrote {
		c.store.refreshes.Add(1)
	}
	return out, nil
}

// RefreshedOnRead counts the writes reads made to refresh documents
// (serverStatus metrics.ttl.refreshedOnRead).
func (s *Store) RefreshedOnRead() int64 { return s.refreshes.Load() }
