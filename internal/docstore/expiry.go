package docstore

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// ExpiresAt returns when doc expires under the collection's TTL indexes:
// for each TTL index the document is in (partial filters apply), the
// earliest BSON date at the indexed path plus expireAfterSeconds; the
// earliest over all indexes. ok is false when nothing makes it expire.
func (c *Collection) ExpiresAt(doc bson.D) (at time.Time, ok bool) {
	for _, ix := range c.state.Load().ttl {
		if ix.def.ExpireElements {
			continue // it expires elements, not the document
		}
		t, found := ix.expiresAt(doc)
		if found && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

func (ix *indexState) expiresAt(doc bson.D) (time.Time, bool) {
	if ix.partial != nil && !ix.partial.Match(doc) {
		return time.Time{}, false
	}
	path := ix.def.Fields[0].Path
	if v, _, ok := bsonutil.TopLevelIndexKey(doc, path); ok {
		d, isDate := v.(bson.DateTime)
		if !isDate {
			return time.Time{}, false
		}
		return ix.expiry(d), true
	}
	vals, _ := bsonutil.IndexKeys(doc, path)
	var earliest bson.DateTime
	found := false
	for _, v := range vals {
		if d, ok := v.(bson.DateTime); ok && (!found || d < earliest) {
			earliest, found = d, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return ix.expiry(earliest), true
}

// rawExpiresAt is expiresAt read from raw BSON without decoding it. ok is
// false where it cannot tell (a partial filter, a dotted or collated path,
// an array or a document at the path, undecodable BSON): the caller
// decodes the document and asks expiresAt.
func (ix *indexState) rawExpiresAt(raw []byte) (at time.Time, found, ok bool) {
	if !ix.simple {
		return time.Time{}, false, false
	}
	v, _, scalar, err := bsonutil.LookupScalar(raw, ix.def.Fields[0].Path)
	if err != nil || !scalar {
		return time.Time{}, false, false
	}
	d, isDate := v.(bson.DateTime)
	if !isDate {
		return time.Time{}, false, true
	}
	return ix.expiry(d), true, true
}

// expiry is when a document dated d expires under ix.
func (ix *indexState) expiry(d bson.DateTime) time.Time {
	return time.UnixMilli(int64(d)).Add(time.Duration(ix.def.ExpireAfter) * time.Second)
}

// Expired reports whether doc has expired at now: a date at or before
// now − expireAfterSeconds, as MongoDB's monitor decides (boundary included).
func (c *Collection) Expired(doc bson.D, now time.Time) bool {
	at, ok := c.ExpiresAt(doc)
	return ok && !at.After(now)
}

// expiredNow applies exact expiry: with it off, expired documents stay
// visible until the monitor deletes them, as in MongoDB.
func (c *Collection) expiredNow(doc bson.D) bool {
	if !c.store.exactExpiry.Load() || !c.HasTTL() {
		return false
	}
	return c.Expired(doc, c.store.clock.Now())
}
