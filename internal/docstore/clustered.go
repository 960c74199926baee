package docstore

import (
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/ttlmark"
)

// A clustered collection with expireAfterSeconds expires each document
// whose _id is a BSON date that long after the date, as mongod's monitor
// does (its bounded scan covers the date range of the cluster key only:
// ObjectIds, numbers and strings never expire). Documents are keyed by
// their encoded _id, and dates sort together, so the documents with date
// _ids are one key range in date order: exactly a TTL index's date
// entries. The collection's TTL state is therefore an index state whose
// prefix is the documents' prefix, among the collection's TTL indexes:
// NextExpiry, the monitor's passes, the progress mark, exact expiry on
// read, expiry events and the counters treat it as any TTL index. What
// differs is the entry: its value is the document itself, which the pass
// deletes as read (no deletion record, no second read).

// newClusteredTTL is the TTL state of meta's expireAfterSeconds; nil
// when the collection has none.
func newClusteredTTL(meta *catalog.Collection) *indexState {
	def := meta.ClusteredTTLIndex()
	if def == nil {
		return nil
	}
	return &indexState{
		def: def, prefix: docPrefix(meta.ID), simple: true, desc: []bool{false},
		clustered: true, progress: ttlmark.New(maxBatchesInFlight), warnedTo: new(atomic.Int64), warnedStored: new(atomic.Int64), warnMu: new(sync.Mutex),
	}
}

// addClustered makes ix (nil: none) the state's clustered TTL.
func (st *collState) addClustered(ix *indexState) {
	if ix == nil {
		return
	}
	st.clustered = ix
	st.ttl = append(st.ttl, ix)
}

// IsClustered reports whether the collection was created with
// clusteredIndex.
func (c *Collection) IsClustered() bool { return c.meta().Clustered }

// SetClusteredExpiry sets a clustered collection's expireAfterSeconds
// (secs ≥ 0) or turns it off (secs < 0), for collMod. The catalog change
// is an ordinary catalog write: replicated, and a new TTL state (from the
// earliest date) replaces the old one.
func (c *Collection) SetClusteredExpiry(secs int64) error {
	e := c.Edit()
	defer e.Close()
	if err := e.SetClusteredExpiry(secs); err != nil {
		return err
	}
	if e.Meta().ClusteredTTL == e.Old().ClusteredTTL && e.Meta().ClusteredExpireAfter == e.Old().ClusteredExpireAfter {
		return nil // unchanged: the TTL state and its progress stay
	}
	return e.Commit(nil)
}

// noteClusteredEntry announces a new document of a clustered TTL
// collection: its key is an entry of the TTL state, which may fall below
// the progress mark (an old date).
func (t *tx) noteClusteredEntry(d *stored) {
	if ix := t.st.clustered; ix != nil {
		t.noteTTLEntry(ix, d.idEnc)
	}
}

// expireClustered deletes the document at the clustered TTL entry of the
// walk (key idEnc, value the document) with its expiry event.
func (t *tx) expireClustered(ix *indexState, idEnc, raw []byte) error {
	old := &stored{idEnc: append([]byte(nil), idEnc...), raw: append([]byte(nil), raw...)}
	return t.expireRead(ix, old)
}

// takeClustered deletes the document at tc, an expired entry of a
// clustered TTL state, as walk does an index entry with a deletion
// record; stop is true at the batch's limit.
func (p *ExpiryPass) takeClustered(t *tx, tc *ttlCursor, d bson.DateTime, res *ExpireResult, limit int, span *idSpan) (stop bool, err error) {
	if res.Deleted == limit {
		res.More = true
		return true, nil
	}
	key := tc.it.Key()
	p.after = append(p.after[:0], key...)
	id := key[len(p.ix.prefix):]
	if !p.takeable(t, id) {
		p.left = min(p.left, int64(d)) // busy: the next pass comes back
		return false, nil
	}
	span.add(id)
	res.Expiries = append(res.Expiries, p.ix.expiry(d).UnixNano())
	if err := t.expireClustered(p.ix, id, tc.it.Value()); err != nil {
		return false, err
	}
	res.Deleted++
	return false, nil
}
