package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// MaxDocumentSize is MongoDB's limit for one stored document.
const MaxDocumentSize = 16 * 1024 * 1024

// WriteOptions say how durable a write must be before it returns.
type WriteOptions struct {
	// Sync waits until the write is on stable storage (j: true).
	Sync bool
	// Extra, when set, adds writes of the caller's to the batch of each
	// document change, so they commit atomically with it (a retryable
	// write's session record).
	Extra func(storage.Batch) error
	// Durable, when set, gathers the syncs of the write's commits for the
	// caller to wait for once, with Store.WaitDurable (a command with
	// j: true, whose statements share one fsync). Sync is then not needed.
	Durable *Durability
	// BypassValidation skips the collection's schema validator, as a
	// command's bypassDocumentValidation does; the collection's other
	// rules still hold (rules.go).
	BypassValidation bool
	// Txn, when set, makes the write a statement of that transaction
	// (txnroute.go): it lands in the transaction's writes, not storage,
	// and Sync, Extra and Durable are the commit's business.
	Txn *Txn
}

// stored is a document as read back under the write lock. doc may be nil
// until needed (see stored.keys).
type stored struct {
	idEnc []byte
	raw   []byte
	doc   bson.D
}

// tx collects the writes of one document change into one atomic batch.
type tx struct {
	c      *Collection
	st     *collState
	locks  *lockSet
	b      storage.Batch
	dCount int64
	dSize  int64
	// keysRemoved counts the index entries removeDoc deleted (a document's
	// own key counts as its _id index entry), for metrics.ttl.deletedKeys.
	keysRemoved int
	// expiry is the earliest expiry among documents this batch writes.
	expiry    time.Time
	hasExpiry bool
	// sortDeletes makes removeDoc gather its deletions for commit to apply
	// in key order: the memtable then inserts each next to the one before
	// instead of searching from the top (a TTL batch deletes thousands).
	// The deletions are grouped by key range (documents, then each index
	// in st.indexes order), each group usually sorted already.
	sortDeletes bool
	deleteHint  int // documents expected, to size the groups
	// runs, when set, lets applyDeletes delete a run of keys that is all
	// storage holds between its ends as one range deletion: only where
	// no other writer can add a key inside the run before the commit.
	runs    *runDeletion
	deletes [][]pendingDelete
	// arena holds the keys removeByRecord builds; docPrefix is the
	// collection's document key prefix, once computed.
	arena, docPrefix []byte
	// ttlAdded is, per TTL index of st, the earliest date of the entries
	// this batch adds (math.MaxInt64: none; nil: no TTL entry at all).
	ttlAdded []int64
	// extra is WriteOptions.Extra of the write this batch belongs to.
	extra func(storage.Batch) error
	// durable, for a write that asked for a journal sync, takes the wait
	// for that sync, which the write does after releasing its locks.
	durable *syncWait
	// multikey holds the array paths this batch adds, by index ID.
	multikey map[uint32][][]string
	// images caches whether the collection keeps pre- and post-images
	// for change streams (0: not looked up, 1: no, 2: yes).
	images byte
	// evicted counts the documents an lruLimit evicted; lruAdded holds,
	// per lruLimit index ID, the lowest entry this batch adds (lru.go).
	evicted  int64
	lruAdded map[uint32][]byte
	// compactIDs holds the _ids of the documents expireCompact took, in
	// one buffer (compactBuf), and compactLow the earliest of their
	// dates: the batch may go on in flight with them.
	compactIDs [][]byte
	compactBuf []byte
	compactLow int64
	// elements marks the update events of an expireElements pass.
	elements *changestream.ElementExpiry
	// evArena holds the encoded events of a TTL batch (events.go).
	evArena []byte
	// lateWarnings are the documents written whose expiry may already be
	// inside a warning window (warn.go).
	lateWarnings []lateWarning
	// fromMigrate marks a chunk migration's write, which records no
	// change event (frommigrate.go).
	fromMigrate bool
	// owns is the collection's ownership test for the changes the
	// expiry machinery makes, looked up once per batch (ownsLooked);
	// nil: every document is owned. ownsHeld: the answer is held
	// (ownership.go).
	owns       func(bson.D) bool
	ownsLooked bool
	ownsHeld   bool
	// r is what the change reads: the store, or a transaction's view.
	r storage.Reader
	// txn, when set, is the transaction this change is a statement of:
	// commit hands the batch to it instead of storage (txn.go).
	txn *Txn
	// written are the keys an open transaction conflicts on: the
	// documents written and the unique-index values added or removed;
	// in writtenBuf while they fit (noteWritten).
	written    [][]byte
	writtenBuf [2][]byte
	// keyLists holds putDoc's index keys per secondary index while they
	// fit: putDoc keeps no list past its return.
	keyLists [4][][]byte
	// ttlAddedBuf is ttlAdded's room while the collection has few TTL
	// indexes.
	ttlAddedBuf [2]int64
	// keys holds the index keys the write computes.
	keys keyArena
	// touchLog is, while putDoc writes entries, the index whose entry
	// may be the document's log; touchLogged, that it is (touchlog.go).
	touchLog    *indexState
	touchLogged bool
}

func (c *Collection) newTx(l *lockSet) *tx { return c.newTxIn(new(tx), l) }

// newTxIn is newTx in t, which must be unused: what the change keeps
// (its key arena's keys) stays its own.
func (c *Collection) newTxIn(t *tx, l *lockSet) *tx {
	*t = tx{c: c, st: c.state.Load(), locks: l, b: c.store.eng.NewBatch(), r: c.store.eng}
	return t
}

// firstRoom is room for a T in a call's struct (modifyCall, groupCall,
// insertRoom), taken by its first use: a later one (another attempt) gets
// a new T, as what an earlier one made may still be referred to.
type firstRoom[T any] struct {
	v    T
	took bool
}

// take returns the room the first time (never from a nil r), else a new T.
func (r *firstRoom[T]) take() *T {
	if r == nil || r.took {
		return new(T)
	}
	r.took = true
	return &r.v
}

// load is loadForWrite through the change's reader.
func (t *tx) load(idEnc []byte) (*stored, error) {
	if b := t.c.inFlight.BatchOf(idEnc); b != nil {
		return nil, errInFlight{batch: b}
	}
	return t.c.loadFrom(t.r, idEnc)
}

// loadExpectingNone is load for an insert, which most often finds
// nothing: it reads by a key in t's arena (Get keeps no reference to it)
// and allocates only a document it finds.
func (t *tx) loadExpectingNone(idEnc []byte) (*stored, error) {
	if b := t.c.inFlight.BatchOf(idEnc); b != nil {
		return nil, errInFlight{batch: b}
	}
	raw, err := readRaw(t.r, t.docKey(idEnc))
	if raw == nil || err != nil {
		return nil, err
	}
	d := &stored{idEnc: idEnc, raw: raw}
	return d, d.decode()
}

// needsUniqueLock reports whether writing doc over old (nil for an insert)
// adds entries to a unique secondary index, or the collection is capped or
// bounded by an lruLimit (whose writes must see exact counts).
func (t *tx) needsUniqueLock(doc bson.D, old *stored) (bool, error) {
	if t.st.meta.Capped || len(t.st.lru) > 0 {
		return true, nil
	}
	for _, ix := range t.st.indexes[1:] {
		if !ix.def.RefusesDuplicates() {
			continue
		}
		if old == nil {
			return true, nil
		}
		changed, err := keysDiffer(ix, old.doc, doc)
		if changed || err != nil {
			return true, err
		}
	}
	return false, nil
}

func keysDiffer(ix *indexState, a, b bson.D) (bool, error) {
	ka, err := ix.entryKeys(a)
	if err != nil {
		return false, err
	}
	kb, err := ix.entryKeys(b)
	if err != nil || len(ka) != len(kb) {
		return true, err
	}
	for _, k := range kb {
		if !containsKey(ka, k) {
			return true, nil
		}
	}
	return false, nil
}

func (t *tx) commit(opt WriteOptions) error {
	if t.txn != nil {
		return t.txn.absorb(t)
	}
	defer t.b.Close()
	if err := t.applyDeletes(); err != nil {
		return err
	}
	if t.extra != nil && t.b.Len() > 0 {
		if err := t.extra(t.b); err != nil {
			return err
		}
	}
	if t.b.Len() == 0 {
		return nil
	}
	if len(t.lateWarnings) > 0 {
		defer t.sendLateWarnings()()
	}
	meta, release, err := t.stageMultikey()
	if err != nil {
		return err
	}
	defer release()
	if n, ok := t.b.(storage.CountNoter); ok {
		n.NoteCounts(t.st.meta.ID, t.dCount, t.dSize)
	}
	// Commit without sync while holding the collection lock; the fsync, if
	// asked for, happens after the lock is released so that concurrent
	// durable writers share one fsync.
	if err := t.commitBatch(); err != nil {
		return fmt.Errorf("docstore: commit: %w", err)
	}
	t.c.store.txns.stamp(t.written)
	t.c.publishMeta(meta)
	t.c.count.Add(t.dCount)
	t.c.dataSize.Add(t.dSize)
	if t.evicted > 0 {
		t.c.store.evictions.Add(t.evicted)
	}
	t.announceTTLDates()
	if t.hasExpiry {
		t.c.store.hintExpiry(t.expiry)
	}
	return nil
}

// commitBatch commits the batch, durably in two steps when the write asked
// for a journal sync.
func (t *tx) commitBatch() error {
	sw := t.durable
	if sw == nil || (!sw.want && sw.into == nil) {
		return t.b.Commit(false)
	}
	wait, err := storage.CommitNoWait(t.b, t.c.store.eng)
	if err == nil && sw.into != nil {
		sw.into.add(wait)
		return nil
	}
	sw.wait = wait
	return err
}

func (t *tx) abort() { t.b.Close() }

// syncWait is how a write with WriteOptions.Sync becomes durable: its
// batch's commit leaves the wait for the sync here, or in into when the
// caller gathers its writes' syncs (WriteOptions.Durable).
type syncWait struct {
	want bool
	wait func() error
	into *Durability
}

func makeSyncWait(opt WriteOptions) syncWait {
	return syncWait{want: opt.Sync && opt.Durable == nil, into: opt.Durable}
}

// Durability gathers the syncs a caller's writes wait for (see
// WriteOptions.Durable). Safe for concurrent use.
type Durability struct {
	mu    sync.Mutex
	waits []func() error
}

func (d *Durability) add(wait func() error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waits = append(d.waits, wait)
}

// WaitDurable waits until every write gathered in d is durable and returns
// the first failure. With none gathered (the writes changed nothing) it
// syncs what came before, as j: true on such a write still waits for the
// journal.
func (s *Store) WaitDurable(d *Durability) error {
	d.mu.Lock()
	waits := d.waits
	d.waits = nil
	d.mu.Unlock()
	if len(waits) == 0 {
		return s.Sync()
	}
	var first error
	for _, wait := range waits {
		if err := wait(); err != nil && first == nil {
			first = fmt.Errorf("docstore: sync: %w", err)
		}
	}
	return first
}

// del deletes key, of group 0 (documents) or 1+i (index i), now or, with
// sortDeletes, at commit in key order.
func (t *tx) del(group int, key []byte) error { return t.delExpired(group, key, 0) }

// pendingDelete is a deletion sortDeletes holds for commit: its key and,
// when the value expired (a TTL pass's), when (0: not known to have).
type pendingDelete struct {
	key       []byte
	expiredAt int64
}

// delExpired is del of a key whose value expired at expiredAt (Unix ns;
// 0 for one that did not), which the engine's cache then need not look
// for (storage.ExpiredDeleter).
func (t *tx) delExpired(group int, key []byte, expiredAt int64) error {
	if !t.sortDeletes {
		return t.deleteNow(pendingDelete{key, expiredAt})
	}
	if t.deletes == nil {
		t.deletes = make([][]pendingDelete, 1+len(t.st.indexes))
		for i := range t.deletes {
			t.deletes[i] = make([]pendingDelete, 0, t.deleteHint)
		}
	}
	t.deletes[group] = append(t.deletes[group], pendingDelete{key, expiredAt})
	return nil
}

func (t *tx) deleteNow(d pendingDelete) error {
	if d.expiredAt != 0 {
		if e, ok := t.b.(storage.ExpiredDeleter); ok {
			return e.DeleteExpired(d.key, d.expiredAt)
		}
	}
	return t.b.Delete(d.key)
}

// minDeleteRun is the shortest run applyDeletes deletes as a range.
const minDeleteRun = 16

func (t *tx) applyDeletes() error {
	byKey := func(a, b pendingDelete) int { return bytes.Compare(a.key, b.key) }
	for g, group := range t.deletes {
		if !slices.IsSortedFunc(group, byKey) {
			slices.SortFunc(group, byKey)
		}
		if t.runs != nil {
			if err := t.deleteRuns(group, t.runs.consecutive(g, len(group))); err != nil {
				return err
			}
			continue
		}
		for _, d := range group {
			if err := t.deleteNow(d); err != nil {
				return err
			}
		}
	}
	t.deletes = nil
	return nil
}

// runDeletion is what deletes runs of keys as ranges: the batch, and an
// iterator over the keys' ranges in storage to find the runs with.
type runDeletion struct {
	b  storage.RunDeleter
	it storage.Iterator
	// chained counts, per deletion group, the group's first keys that
	// were each found one step of it after the one before (noteFound):
	// a group whose keys all were is one run in storage already.
	chained []int
}

// noteFound notes that the key of deletion group g that an apply found
// in storage went into the group, which held before keys then; stepped
// says the iterator reached it in one step from the group's last key.
func (r *runDeletion) noteFound(g, before int, stepped bool, group []pendingDelete, key []byte) {
	if r.chained[g] == before && len(group) == before+1 && bytes.Equal(group[before].key, key) && (before == 0 || stepped) {
		r.chained[g]++
	}
}

// consecutive reports whether deletion group g's n keys are all chained.
func (r *runDeletion) consecutive(g, n int) bool {
	return n > 0 && r.chained[g] == n
}

// deleteRuns deletes group, sorted, as range deletions where its keys
// are runs of all storage holds (storage.DeleteRuns); consecutive says
// they are known to be one.
func (t *tx) deleteRuns(group []pendingDelete, consecutive bool) error {
	keys := make([][]byte, len(group))
	for i, d := range group {
		keys[i] = d.key
	}
	ks := storage.RunKeys{Keys: keys, ExpiredAt: func(i int) int64 { return group[i].expiredAt }, Consecutive: consecutive}
	return storage.DeleteRuns(t.runs.it, t.runs.b, ks, minDeleteRun, func(i int) error { return t.deleteNow(group[i]) })
}

func (t *tx) noteExpiry(doc bson.D) {
	if len(t.st.ttl) == 0 {
		return
	}
	if at, ok := t.c.ExpiresAt(doc); ok && (!t.hasExpiry || at.Before(t.expiry)) {
		t.expiry, t.hasExpiry = at, true
	}
	for _, ix := range t.st.elements {
		// The monitor wakes for an element's expiry too.
		if at, ok := ix.expiresAt(doc); ok && (!t.hasExpiry || at.Before(t.expiry)) {
			t.expiry, t.hasExpiry = at, true
		}
	}
}

// finish makes a write that ended with err durable if it asked to be: it
// waits for its commit's sync, or, when it committed nothing, syncs what
// came before. A commit's wait is always called: it releases what the
// commit holds.
func (c *Collection) finish(sw *syncWait, err error) error {
	if err != nil {
		if sw.wait != nil {
			_ = sw.wait()
		}
		return err
	}
	if !sw.want {
		return nil
	}
	wait := sw.wait
	if wait == nil {
		wait = c.store.eng.Sync
	}
	if err := wait(); err != nil {
		return fmt.Errorf("docstore: sync: %w", err)
	}
	return nil
}

// PrepareInsert gives doc an _id (a new ObjectId when absent), moves _id to
// the front as MongoDB stores it, and checks the rules for _id values.
func PrepareInsert(doc bson.D) (bson.D, error) {
	idx := -1
	for i, e := range doc {
		if e.Key == "_id" {
			idx = i
			break
		}
	}
	if idx < 0 {
		return append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, doc...), nil
	}
	if err := checkIDValue(doc[idx].Value); err != nil {
		return nil, err
	}
	if idx == 0 {
		return doc, nil
	}
	out := make(bson.D, 0, len(doc))
	out = append(out, doc[idx])
	out = append(out, doc[:idx]...)
	return append(out, doc[idx+1:]...), nil
}

func checkIDValue(v any) error {
	switch v.(type) {
	case bson.A:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type array")
	case bson.Regex:
		return mongoerr.New(mongoerr.InvalidIDField, "can't use a regex for _id")
	case bson.Undefined:
		return mongoerr.New(mongoerr.InvalidIDField, "can't use a undefined for _id")
	}
	return nil
}

func marshalDoc(doc bson.D) ([]byte, error) {
	raw, err := bsonutil.Marshal(doc)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "cannot encode document: %v", err)
	}
	if len(raw) > MaxDocumentSize {
		return nil, mongoerr.Newf(mongoerr.Location17419, "Resulting document after update is larger than %d", MaxDocumentSize)
	}
	return raw, nil
}

// Insert stores one document (prepared by PrepareInsert) and its index
// entries atomically. A live document with the same _id or unique key is a
// duplicate-key error; an expired one is treated as gone and replaced.
func (c *Collection) Insert(doc bson.D, opt WriteOptions) error {
	if opt.Txn != nil {
		return opt.Txn.insert(c, doc, opt)
	}
	p, err := c.prepareStored(GroupDoc{Doc: doc, Opt: opt})
	if err != nil {
		return err
	}
	g := &groupCall{sw: makeSyncWait(opt)}
	return c.finish(&g.sw, c.insertLocked(g, p.idEnc, p.raw, doc, opt.Extra))
}

func (c *Collection) insertLocked(g *groupCall, idEnc, raw []byte, doc bson.D, extra func(storage.Batch) error) error {
	return c.withDocLockIn(&g.locks, idEnc, func(l *lockSet) error {
		if c.dropped.Load() {
			return mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s was dropped", c.Namespace())
		}
		t := c.newTxIn(g.txs.take(), l)
		t.extra, t.durable = extra, &g.sw
		if err := t.insert(&stored{idEnc: idEnc, raw: raw, doc: doc}); err != nil {
			t.abort()
			return err
		}
		return t.commit(WriteOptions{})
	})
}

// insert writes a new document, replacing an expired one with its _id.
func (t *tx) insert(d *stored) error {
	old, err := t.loadExpectingNone(d.idEnc)
	if err != nil {
		return err
	}
	if old != nil {
		if !t.c.expiredNow(old.doc) {
			return t.c.dupKeyError(t.st.indexes[0], d.doc)
		}
		if err := t.expireDoc(old); err != nil {
			return err
		}
	}
	if need, err := t.needsUniqueLock(d.doc, nil); err != nil {
		return err
	} else if need {
		t.locks.lockUnique()
	}
	if err := t.putDoc(d, nil); err != nil {
		return err
	}
	t.emitWrite(d, nil, false)
	if err := t.evictForCap(d.idEnc); err != nil {
		return err
	}
	return t.evictForLRU(d.idEnc)
}

// loadLocked reads the stored document with the given encoded _id.
func (c *Collection) loadLocked(idEnc []byte) (*stored, error) {
	return c.loadFrom(c.store.eng, idEnc)
}

// loadRawLocked reads the bytes of the stored document with the given
// encoded _id, nil when there is none, without decoding them: an expiry
// event carries the bytes alone.
func (c *Collection) loadRawLocked(idEnc []byte) ([]byte, error) {
	return readRaw(c.store.eng, docKey(c.meta().ID, idEnc))
}

// readRaw reads a stored document's bytes from r, nil when there is none.
func readRaw(r storage.Reader, key []byte) ([]byte, error) {
	raw, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docstore: read: %w", err)
	}
	return raw, nil
}

// loadFrom reads the document with the given encoded _id from r.
func (c *Collection) loadFrom(r storage.Reader, idEnc []byte) (*stored, error) {
	return c.loadInto(new(loaded), r, idEnc)
}

// loadInto is loadFrom into l, which must be unused: what it reads stays
// the document's.
func (c *Collection) loadInto(l *loaded, r storage.Reader, idEnc []byte) (*stored, error) {
	l.stored = stored{idEnc: idEnc}
	raw, err := l.get(r, appendDocKey(l.key[:0], c.meta().ID, idEnc))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docstore: read: %w", err)
	}
	l.raw = raw
	return &l.stored, l.decode()
}

// loaded is a stored document read by loadFrom, with room for the key it
// was read by and for a small document's bytes: one allocation, not
// three. Nothing writes either after the read, so a reader that kept the
// key would still see it whole.
type loaded struct {
	stored
	key   [40]byte
	value [loadedRoom]byte
}

// loadedRoom holds a small document, a session's among them.
const loadedRoom = 192

// get reads key's value into l.value when r can (storage.AppendGetter)
// and it fits, capped so that nothing appends to it in place.
func (l *loaded) get(r storage.Reader, key []byte) ([]byte, error) {
	ag, ok := r.(storage.AppendGetter)
	if !ok {
		return r.Get(key)
	}
	v, err := ag.AppendGet(l.value[:0], key)
	return v[:len(v):len(v)], err
}

// putDoc writes doc and the difference between its index entries and
// those of old (nil for a new document).
func (t *tx) putDoc(d *stored, old *stored) error {
	secondary := t.st.indexes[1:]
	keys := t.keyListsFor(len(secondary))
	hasTTL := false
	for i, ix := range secondary {
		var err error
		if keys[i], err = t.keys.entryKeys(ix, d.doc); err != nil {
			return err
		}
		t.noteMultikey(ix, d.doc)
		hasTTL = hasTTL || ix.def.TTL
	}
	rec := ttlRecord{idEnc: d.idEnc, size: len(d.raw)}
	if hasTTL {
		rec.indexes, rec.keys = secondary, keys
	}
	t.touchLog, t.touchLogged = t.touchLogIndex(d, old), false
	for i, ix := range secondary {
		if err := t.updateIndex(ix, keys[i], d, old, &rec); err != nil {
			return err
		}
	}
	t.touchLog = nil
	key := t.docKey(d.idEnc)
	if err := t.setTouched(key, d); err != nil {
		return err
	}
	t.noteWritten(key)
	t.noteExpiry(d.doc)
	t.noteLateWarning(d, old)
	t.dSize += int64(len(d.raw))
	if old == nil {
		t.dCount++
		t.noteClusteredEntry(d)
	} else {
		t.dSize -= int64(len(old.raw))
	}
	return nil
}

// keyListsFor returns n empty per-index key lists, in t's own room when
// they fit.
func (t *tx) keyListsFor(n int) [][][]byte {
	if n > len(t.keyLists) {
		return make([][][]byte, n)
	}
	keys := t.keyLists[:n]
	clear(keys)
	return keys
}

// ttlRecord is the deletion record a document's TTL entries carry (none
// when indexes is nil), made when the first entry that carries it is
// written: a touch that appends (updateAppending) writes none. It holds
// the document's _id and size, not the document: a pointer to that would
// send putDoc's document to the heap.
type ttlRecord struct {
	idEnc   []byte
	size    int
	indexes []*indexState
	keys    [][][]byte
	value   []byte
}

// get makes the record in a's room (the batch copies what it sets).
func (r *ttlRecord) get(a *keyArena) []byte {
	if r.value == nil && r.indexes != nil {
		room := a.room(ttlentry.RecordSize(r.idEnc, r.size, r.indexes, indexID, r.keys))
		r.value = ttlentry.AppendRecord(room, r.idEnc, r.size, r.indexes, indexID, r.keys)
	}
	return r.value
}

// updateIndex writes the entries newKeys of d in ix that old lacks and
// deletes those of old that d lacks. A TTL index's entries carry the
// deletion record rec, which changes with the document's size and
// keys, so they are all written again, except where a touch appends
// (updateAppending).
func (t *tx) updateIndex(ix *indexState, newKeys [][]byte, d, old *stored, rec *ttlRecord) error {
	var oldKeys [][]byte
	if old != nil {
		var err error
		if oldKeys, err = t.keys.entryKeys(ix, old.doc); err != nil {
			return err
		}
		if ix.appends {
			if done, err := t.updateAppending(ix, oldKeys, newKeys, d); done || err != nil {
				return err
			}
		}
	}
	for _, k := range oldKeys {
		if !containsKey(newKeys, k) {
			if err := t.b.Delete(t.entryKey(ix, k, old.idEnc)); err != nil {
				return err
			}
			t.noteUnique(ix, k)
		}
	}
	var value []byte
	for _, k := range newKeys {
		kept := containsKey(oldKeys, k)
		if kept && !ix.def.TTL {
			continue
		}
		var claimed []byte // k's range, found empty under the unique-key lock
		if !kept {
			var err error
			if claimed, err = t.checkUnique(ix, k, d); err != nil {
				return err
			}
			t.noteUnique(ix, k)
			t.noteTTLEntry(ix, k)
			if ix.lruMark != nil {
				t.noteLRUEntry(ix, entryKey(ix, k, d.idEnc))
			}
		}
		if value == nil {
			value = entryValue(ix, d.idEnc, rec.get(&t.keys), len(newKeys))
		}
		ek := t.entryKey(ix, k, d.idEnc)
		if err := t.b.Set(ek, value); err != nil {
			return err
		}
		if claimed != nil {
			t.noteSoleEntry(ix, claimed, ek, value)
		}
	}
	return nil
}

// noteSoleEntry tells the engine's cache that the range lower of ix, which
// the write found empty, holds only (key, value) once it commits: no other
// writer can add to it while this one holds the unique-key lock, nor take
// the entry away while it holds the document's stripe. A session's first
// lookup by token then finds its entry resident.
func (t *tx) noteSoleEntry(ix *indexState, lower, key, value []byte) {
	if t.locks == nil || !t.locks.unique || !ix.def.Ready {
		return
	}
	if n, ok := t.b.(storage.SoleEntryNoter); ok {
		n.NoteSoleEntry(lower, key, value)
	}
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

func entryKey(ix *indexState, key, idEnc []byte) []byte {
	return appendEntryKey(make([]byte, 0, entryKeySize(ix, key, idEnc)), ix, key, idEnc)
}

// entryKey is the package's entryKey in t's key arena: for a key the
// batch copies (Set, Delete) or t keeps no longer than itself.
func (t *tx) entryKey(ix *indexState, key, idEnc []byte) []byte {
	return appendEntryKey(t.keys.room(entryKeySize(ix, key, idEnc)), ix, key, idEnc)
}

// docKey is the package's docKey in t's key arena, as entryKey.
func (t *tx) docKey(idEnc []byte) []byte {
	return appendDocKey(t.keys.room(docKeySize(idEnc)), t.st.meta.ID, idEnc)
}

// noteWritten adds key to written, in writtenBuf while it has room.
func (t *tx) noteWritten(key []byte) {
	if t.written == nil {
		t.written = t.writtenBuf[:0]
	}
	t.written = append(t.written, key)
}

func entryKeySize(ix *indexState, key, idEnc []byte) int {
	return len(ix.prefix) + len(key) + len(idEnc)
}

func appendEntryKey(dst []byte, ix *indexState, key, idEnc []byte) []byte {
	dst = append(dst, ix.prefix...)
	dst = append(dst, key...)
	return append(dst, idEnc...)
}

// checkUnique fails with E11000 when another live document holds key in a
// unique index. An expired holder is deleted in the same batch instead.
// When the index had no entry for key at all, it returns the range's lower
// bound (noteSoleEntry).
//
// A unique index being built refuses no write: its build judges the keys
// writes added at its end, as mongod's does (indexbuild.go).
func (t *tx) checkUnique(ix *indexState, key []byte, d *stored) (empty []byte, err error) {
	if !ix.def.RefusesDuplicates() || ix.def.IsID() {
		return nil, nil
	}
	if !ix.def.Ready {
		t.c.builds.noteDuplicated(ix, key)
		return nil, nil
	}
	lo := append(append([]byte(nil), ix.prefix...), key...)
	it, err := t.r.NewIter(lo, prefixEnd(lo))
	if err != nil {
		return nil, err
	}
	var holders [][]byte
	seen := false
	for ok := it.First(); ok; ok = it.Next() {
		seen = true
		if id := ttlentry.ID(it.Key(), it.Value()); !bytes.Equal(id, d.idEnc) {
			holders = append(holders, append([]byte(nil), id...))
		}
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return nil, err
	}
	if !seen {
		return lo, nil
	}
	return nil, t.evictHolders(ix, key, holders, d)
}

// evictHolders fails with E11000 when a live holder of key has it as its
// own entry (not a touch's stale one, left from before the index was made
// unique: ttlloose.go), and deletes expired holders.
func (t *tx) evictHolders(ix *indexState, key []byte, holders [][]byte, d *stored) error {
	for _, h := range holders {
		if t.locks != nil && !t.locks.tryStripe(t.c.stripeOf(h)) {
			return errRetry
		}
		live, _, err := t.liveHolder(ix, key, h)
		if err != nil {
			return err
		}
		if live != nil {
			return t.c.dupKeyError(ix, d.doc)
		}
	}
	return nil
}

// liveHolder reads document h, which has an entry for key in ix: it is
// returned when it holds that key as its own and is live; when it has
// expired it is deleted in t instead (expired).
func (t *tx) liveHolder(ix *indexState, key, h []byte) (live *stored, expired bool, err error) {
	other, err := t.load(h)
	if err != nil || other == nil {
		return nil, false, err
	}
	if holds, err := ix.holdsEntry(entryKey(ix, key, h), h, other.raw); err != nil || !holds {
		return nil, false, err
	}
	if t.c.expiredNow(other.doc) {
		return nil, true, t.expireDoc(other)
	}
	return other, false, nil
}

// removeDoc deletes a stored document and all of its index entries.
func (t *tx) removeDoc(old *stored) error {
	for i, ix := range t.st.indexes[1:] {
		keys, err := t.storedKeys(ix, old)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := t.del(2+i, t.entryKey(ix, k, old.idEnc)); err != nil {
				return err
			}
			t.noteUnique(ix, k)
		}
		t.keysRemoved += len(keys)
	}
	key := t.docKey(old.idEnc)
	if err := t.del(0, key); err != nil {
		return err
	}
	t.noteWritten(key)
	t.keysRemoved++
	t.dCount--
	t.dSize -= int64(len(old.raw))
	return nil
}

// storedKeys is d.keys(ix), computed in t's key arena when d is decoded:
// the keys are the same (keyArena.entryKeys is ix.entryKeys), without
// their allocations while the arena has room.
func (t *tx) storedKeys(ix *indexState, d *stored) ([][]byte, error) {
	if d.doc == nil {
		return d.keys(ix)
	}
	return t.keys.entryKeys(ix, d.doc)
}

func (c *Collection) dupKeyError(ix *indexState, doc bson.D) error {
	kv := ix.keyValueDoc(doc)
	return &mongoerr.Error{
		Code: mongoerr.DuplicateKey,
		Msg:  fmt.Sprintf("E11000 duplicate key error collection: %s index: %s%s dup key: %s", c.Namespace(), ix.def.Name, ix.collationNote(), bsonutil.Format(ix.messageKey(kv))),
		Extra: []mongoerr.KV{
			{Key: "keyPattern", Value: ix.def.KeyPattern()},
			{Key: "keyValue", Value: kv},
		},
	}
}

// ChangeKind says what Modify should do with a document.
type ChangeKind int

// The outcomes of a Modify callback.
const (
	Keep ChangeKind = iota
	Replace
	Remove
	// Insert inserts Doc where there is no live document (ModifyGroup
	// only: an upsert's insert, $merge's whenNotMatched).
	Insert
)

// Change is what a Modify callback decided.
type Change struct {
	Kind ChangeKind
	Doc  bson.D // the new document, for Replace
	// Whole says Doc replaces the document as a whole (a replacement
	// document, reported to change streams as "replace"), not through
	// update operators ("update").
	Whole bool
}

// Modify loads the live document with the given _id, lets fn decide what to
// do with it, and applies the decision atomically, all under the
// collection's write lock so nothing changes in between. fn receives nil
// when there is no live document. It returns the document as it was.
func (c *Collection) Modify(id any, opt WriteOptions, fn func(doc bson.D) (Change, error)) (bson.D, error) {
	if opt.Txn != nil {
		return opt.Txn.modify(c, id, opt, fn)
	}
	mc := &modifyCall{sw: makeSyncWait(opt)}
	idEnc := keyenc.AppendValue(mc.id[:0], id)
	idEnc = idEnc[:len(idEnc):len(idEnc)]
	old, err := c.modifyLocked(mc, idEnc, opt.Extra, c.checkedChange(fn, opt))
	if err = c.finish(&mc.sw, err); err != nil {
		return nil, err
	}
	return old, nil
}

// modifyCall is what one Modify holds through its attempts: its locks
// (reset by each, lockedOnce), its durability wait, its _id's encoding
// (capped: never written after) and the room its first attempt reads the
// document into and writes through (its tx), in one allocation, not
// five.
type modifyCall struct {
	locks lockSet
	sw    syncWait
	id    [32]byte
	first firstRoom[loaded] // fn may still hold what an earlier attempt read
	txs   firstRoom[tx]
}

func (c *Collection) modifyLocked(mc *modifyCall, idEnc []byte, extra func(storage.Batch) error, fn func(doc bson.D) (Change, error)) (bson.D, error) {
	var cur bson.D
	sw := &mc.sw
	err := c.withDocLockIn(&mc.locks, idEnc, func(l *lockSet) error {
		cur = nil
		if c.dropped.Load() {
			return nil
		}
		old, err := c.loadForWriteInto(mc.first.take(), idEnc)
		if err != nil {
			return err
		}
		if old != nil && !c.expiredNow(old.doc) {
			cur = c.live(old.doc)
		}
		ch, err := fn(cur)
		if err != nil || ch.Kind == Keep || cur == nil {
			return err
		}
		return c.applyChangeIn(c.newTxIn(mc.txs.take(), l), old, ch, extra, sw)
	})
	return cur, err
}

// live is doc, a live document, without its elements that have expired
// when exact expiry hides them.
func (c *Collection) live(doc bson.D) bson.D {
	if len(c.state.Load().elements) > 0 && c.store.exactExpiry.Load() {
		return c.liveElements(doc, c.store.clock.Now())
	}
	return doc
}

func (c *Collection) applyChangeIn(t *tx, old *stored, ch Change, extra func(storage.Batch) error, sw *syncWait) error {
	t.extra, t.durable = extra, sw
	return t.applyChange(old, ch)
}

// applyChange removes or replaces old as ch says and commits.
func (t *tx) applyChange(old *stored, ch Change) error {
	var err error
	if ch.Kind == Remove {
		err = t.deleteDoc(old)
	} else {
		err = t.replace(old, ch.Doc, ch.Whole)
	}
	if err != nil {
		t.abort()
		return err
	}
	return t.commit(WriteOptions{})
}

func (t *tx) replace(old *stored, doc bson.D, whole bool) error {
	raw, err := marshalDoc(doc)
	if err != nil {
		return err
	}
	if need, err := t.needsUniqueLock(doc, old); err != nil {
		return err
	} else if need {
		t.locks.lockUnique()
	}
	d := &stored{idEnc: old.idEnc, raw: raw, doc: doc}
	if err := t.putDoc(d, old); err != nil {
		return err
	}
	t.emitWrite(d, old, whole)
	return t.evictForLRU(d.idEnc)
}
