package docstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Multi-document transactions (docs/design/0015). A Txn reads a storage
// snapshot with its own writes laid over it, and runs each statement
// through the write path's tx against that view: the statement's writes,
// index entries, TTL entries, change events and count changes land in
// the transaction's write set instead of storage. Commit checks that no
// document or unique-index key the transaction wrote was written by
// anyone since its snapshot (first committer wins, txnTable), and
// commits the write set as one batch: on a replica set one log entry,
// applied atomically on every member.

// WriteConflictMessage is mongod's text for a write that met a newer
// version of a document inside a transaction.
const WriteConflictMessage = "Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction."

// ErrTxnDone is returned by a statement or commit of a transaction that
// already committed or aborted.
var ErrTxnDone = errors.New("docstore: transaction already committed or aborted")

// Txn is one multi-document transaction. Its statements run one at a time
// (a session runs one command at a time); Abort may come from another
// goroutine (the lifetime reaper), so every entry point takes x.mu.
type Txn struct {
	s *Store
	// mu is held by each statement, Commit and Abort; snapMu guards the
	// snapshot against Abort's close while a cursor of the transaction
	// still reads it.
	mu     sync.Mutex
	snapMu sync.RWMutex
	snap   storage.Snapshot
	start  uint64 // the txnTable sequence the snapshot holds
	ws     *writeSet
	colls  map[*Collection]*txnColl
	// events are the change events of every statement, in order.
	events  [][]byte
	records bool // the engine's batches keep change events
	// written are the conflict keys of every statement (tx.written).
	written [][]byte
	// afterCommit announces what the statements would have announced at
	// their own commit: TTL dates, the next expiry.
	afterCommit []func()
	// created are the collections the transaction created, in order
	// (txnddl.go).
	created []*txnCreated
	done    bool
	// lsid (the session's lsid document) and txnNumber name the
	// transaction in its change events.
	lsid      []byte
	txnNumber int64
}

// txnColl is what a transaction did to one collection.
type txnColl struct {
	st          *collState // the index set its statements wrote through
	ids         [][]byte   // encoded _ids written
	unique      bool       // some statement took the unique lock
	dCount, dSz int64
	multikey    map[uint32][][]string
}

// BeginTxn starts a transaction reading the store as it is now.
func (s *Store) BeginTxn() *Txn {
	x := &Txn{s: s, ws: newWriteSet(), colls: map[*Collection]*txnColl{}}
	x.start = s.txns.begin(x)
	x.snap = s.eng.NewSnapshot()
	probe := s.eng.NewBatch()
	if eb, ok := probe.(changestream.EventBatch); ok {
		x.records = eb.RecordsEvents()
	}
	_ = probe.Close()
	return x
}

// SetSession names the transaction's session in its change events;
// lsid is the command's lsid document.
func (x *Txn) SetSession(lsid []byte, txnNumber int64) {
	x.lsid, x.txnNumber = slices.Clone(lsid), txnNumber
}

// view is the transaction's reader: its snapshot under its writes.
func (x *Txn) view() storage.Reader { return overlay{base: txnSnapshot{x}, ws: x.ws} }

// txnSnapshot reads the transaction's snapshot while it is open.
type txnSnapshot struct{ x *Txn }

func (r txnSnapshot) Get(key []byte) ([]byte, error) {
	r.x.snapMu.RLock()
	defer r.x.snapMu.RUnlock()
	if r.x.snap == nil {
		return nil, ErrTxnDone
	}
	return r.x.snap.Get(key)
}

func (r txnSnapshot) NewIter(lower, upper []byte) (storage.Iterator, error) {
	r.x.snapMu.RLock()
	defer r.x.snapMu.RUnlock()
	if r.x.snap == nil {
		return nil, ErrTxnDone
	}
	return r.x.snap.NewIter(lower, upper)
}

// Scan is Collection.Scan inside the transaction. Expired documents are
// hidden by the clock at this call, not at the snapshot.
func (x *Txn) Scan(c *Collection, plan *Plan, f *query.Filter) *DocIter {
	return c.Scan(plan, f).Within(x)
}

// Insert is Collection.Insert inside the transaction.
func (x *Txn) Insert(c *Collection, doc bson.D) error {
	return x.insert(c, doc, WriteOptions{})
}

func (x *Txn) insert(c *Collection, doc bson.D, opt WriteOptions) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return ErrTxnDone
	}
	if err := refuseInTxn(c); err != nil {
		return err
	}
	p, err := c.prepareStored(GroupDoc{Doc: doc, Opt: opt})
	if err != nil {
		return err
	}
	return c.withDocLock(p.idEnc, func(l *lockSet) error {
		if c.dropped.Load() {
			return mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s was dropped", c.Namespace())
		}
		t := x.newTx(c, l)
		if err := t.insert(&stored{idEnc: p.idEnc, raw: p.raw, doc: doc}); err != nil {
			t.abort()
			return err
		}
		return t.commit(WriteOptions{})
	})
}

// Modify is Collection.Modify inside the transaction. fn may also
// insert (Insert) where no document lives, as ModifyGroup's may.
func (x *Txn) Modify(c *Collection, id any, fn func(doc bson.D) (Change, error)) (bson.D, error) {
	return x.modify(c, id, WriteOptions{}, fn)
}

func (x *Txn) modify(c *Collection, id any, opt WriteOptions, fn func(doc bson.D) (Change, error)) (bson.D, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return nil, ErrTxnDone
	}
	if err := refuseInTxn(c); err != nil {
		return nil, err
	}
	idEnc := keyenc.AppendValue(nil, id)
	check := c.checkedChange(fn, opt)
	var cur bson.D
	err := c.withDocLock(idEnc, func(l *lockSet) error {
		cur = nil
		if c.dropped.Load() {
			return nil
		}
		t := x.newTx(c, l)
		old, err := t.load(idEnc)
		if err != nil {
			return err
		}
		if old != nil && !c.expiredNow(old.doc) {
			cur = c.live(old.doc)
		}
		ch, err := check(cur)
		switch {
		case err != nil || ch.Kind == Keep:
			return err
		case ch.Kind == Insert:
			if err := t.insertNew(ch.Doc, opt, 0, idEnc); err != nil {
				t.abort()
				return err
			}
			return t.commit(WriteOptions{})
		case cur == nil:
			return nil
		}
		return t.applyChange(old, ch)
	})
	return cur, err
}

// refuseInTxn refuses collections whose writes must see exact committed
// counts, which a transaction's snapshot does not have.
func refuseInTxn(c *Collection) error {
	st := c.state.Load()
	if st.meta.Capped {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", c.Namespace())
	}
	if len(st.lru) > 0 {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Collection '%s' has an lruLimit index. Writes in transactions are not allowed on it.", c.Namespace())
	}
	return nil
}

func (x *Txn) newTx(c *Collection, l *lockSet) *tx {
	return &tx{c: c, st: c.state.Load(), locks: l, b: &stmtBatch{records: x.records}, r: x.view(), txn: x}
}

// absorb takes a finished statement's writes into the write set: the
// statement's commit inside a transaction.
func (x *Txn) absorb(t *tx) error {
	defer t.b.Close()
	if err := t.applyDeletes(); err != nil {
		return err
	}
	sb := t.b.(*stmtBatch)
	if sb.Len() == 0 {
		return nil
	}
	tc, err := x.collection(t)
	if err != nil {
		return err
	}
	if x.s.txns.conflicts(t.written, x.start) || !x.s.intents.claim(x, t.written) {
		return mongoerr.New(mongoerr.WriteConflict, WriteConflictMessage)
	}
	for _, op := range sb.ops {
		x.ws.put(op.key, op.wsOp)
	}
	x.events = append(x.events, sb.events...)
	x.written = append(x.written, t.written...)
	tc.dCount += t.dCount
	tc.dSz += t.dSize
	tc.unique = tc.unique || (t.locks != nil && t.locks.unique)
	for id, paths := range t.multikey {
		if tc.multikey == nil {
			tc.multikey = map[uint32][][]string{}
		}
		tc.multikey[id] = append(tc.multikey[id], paths...)
	}
	x.afterCommit = append(x.afterCommit, t.announce)
	return nil
}

// collection is the transaction's record of t's collection; a statement
// that met another index set than the transaction's earlier ones (an
// index built or dropped in between) conflicts.
func (x *Txn) collection(t *tx) (*txnColl, error) {
	tc, ok := x.colls[t.c]
	if !ok {
		tc = &txnColl{st: t.st}
		x.colls[t.c] = tc
	}
	if !sameIndexes(tc.st, t.st) {
		return nil, mongoerr.New(mongoerr.WriteConflict, WriteConflictMessage)
	}
	for _, k := range t.written {
		if id, ok := docIDOf(t.st.meta.ID, k); ok {
			tc.ids = append(tc.ids, id)
		}
	}
	return tc, nil
}

// sameIndexes reports whether two states of a collection have the same
// indexes (a multikey change publishes a new state with the same ones).
func sameIndexes(a, b *collState) bool {
	if a == b {
		return true
	}
	if len(a.indexes) != len(b.indexes) {
		return false
	}
	for i := range a.indexes {
		x, y := a.indexes[i], b.indexes[i]
		// A build's end changes no ID: a transaction that began during it
		// wrote as to an index that refused no duplicate.
		if x.def.ID != y.def.ID || !sameWrites(x.def, y.def) || !bytes.Equal(x.prefix, y.prefix) {
			return false
		}
	}
	return true
}

// sameWrites reports whether two definitions of one index ask the same of
// the writes that maintain it: a transaction wrote its statements for
// the options it met, so one that began before a collMod that changes
// them (the keys refused, the TTL entries made, the lruLimit) conflicts,
// where mongod's collMod would wait for it. Hidden and refreshOnRead
// change no write.
func sameWrites(a, b *catalog.Index) bool {
	return a.Ready == b.Ready && a.Unique == b.Unique && a.PrepareUnique == b.PrepareUnique &&
		a.TTL == b.TTL && a.ExpireAfter == b.ExpireAfter && a.WarnBefore == b.WarnBefore &&
		a.ExpireElements == b.ExpireElements && a.LRUDocs == b.LRUDocs && a.LRUBytes == b.LRUBytes
}

// docIDOf is the encoded _id of a document key of collection collID.
func docIDOf(collID uint64, key []byte) ([]byte, bool) {
	p := docPrefix(collID)
	if !bytes.HasPrefix(key, p) {
		return nil, false
	}
	return key[len(p):], true
}

// Abort drops the transaction's writes and releases its snapshot. It is
// safe to call more than once, and after Commit.
func (x *Txn) Abort() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.end()
}

func (x *Txn) end() {
	if x.done {
		return
	}
	x.done = true
	x.s.intents.release(x, x.written)
	x.s.txns.end(x)
	x.snapMu.Lock()
	defer x.snapMu.Unlock()
	_ = x.snap.Close()
	x.snap = nil
}

// Commit applies the transaction's writes atomically, or fails with
// WriteConflict when a key it wrote changed since its snapshot. opt.Extra
// adds the caller's writes (the session's record) to the one batch.
// Either way the transaction is over.
func (x *Txn) Commit(opt WriteOptions) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return ErrTxnDone
	}
	defer x.end()
	if len(x.ws.keys) == 0 && len(x.events) == 0 && len(x.created) == 0 {
		return nil
	}
	err := retrying(func() error { return x.commitOnce(opt) }, WriteConflictMessage)
	if err == nil && len(x.created) > 0 {
		x.s.indexesChanged() // the created collections may have TTL indexes
	}
	return err
}

// commitOnce holds the stripes of every document the transaction wrote
// (and the unique lock where it added unique entries), so no write can
// change one between the conflict check and the commit.
func (x *Txn) commitOnce(opt WriteOptions) error {
	defer x.lockCatalog()()
	colls := x.lockOrder()
	locks := make([]*lockSet, 0, len(colls))
	defer func() {
		for i := len(locks) - 1; i >= 0; i-- {
			locks[i].release()
			locks[i].c.schemaMu.RUnlock()
		}
	}()
	for _, c := range colls {
		locks = append(locks, x.lock(c))
	}
	if err := x.validate(colls); err != nil {
		return err
	}
	return x.commitBatch(colls, opt)
}

// lockOrder is the transaction's collections by ID: every committer
// takes their locks in this order.
func (x *Txn) lockOrder() []*Collection {
	colls := make([]*Collection, 0, len(x.colls))
	for c := range x.colls {
		colls = append(colls, c)
	}
	slices.SortFunc(colls, func(a, b *Collection) int { return cmp.Compare(a.meta().ID, b.meta().ID) })
	return colls
}

func (x *Txn) lock(c *Collection) *lockSet {
	c.schemaMu.RLock()
	l := &lockSet{c: c}
	tc := x.colls[c]
	stripes := make([]int, 0, len(tc.ids))
	for _, id := range tc.ids {
		stripes = append(stripes, c.stripeOf(id))
	}
	slices.Sort(stripes)
	for _, s := range stripes {
		l.lockStripe(s)
	}
	if tc.unique {
		l.lockUnique()
	}
	return l
}

// validate refuses the commit when a collection was dropped or its
// indexes changed, or a key the transaction wrote was written since its
// snapshot. A document in an expiry batch still in flight is waited for
// (errInFlight), then checked again: its deletion is then stamped.
func (x *Txn) validate(colls []*Collection) error {
	for _, c := range colls {
		tc := x.colls[c]
		if c.dropped.Load() || !sameIndexes(tc.st, c.state.Load()) {
			return mongoerr.New(mongoerr.WriteConflict, WriteConflictMessage)
		}
		for _, id := range tc.ids {
			if b := c.inFlight.BatchOf(id); b != nil {
				return errInFlight{batch: b}
			}
		}
	}
	if x.s.txns.conflicts(x.written, x.start) {
		return mongoerr.New(mongoerr.WriteConflict, WriteConflictMessage)
	}
	return x.validateCreated()
}

// commitBatch writes the write set, the events, the multikey catalog
// changes and the count changes as one batch, then publishes what the
// statements' own commits would have.
func (x *Txn) commitBatch(colls []*Collection, opt WriteOptions) error {
	b := x.s.eng.NewBatch()
	defer b.Close()
	if err := x.stageCreated(b); err != nil {
		return fmt.Errorf("docstore: commit transaction: %w", err)
	}
	if err := x.ws.replay(b); err != nil {
		return fmt.Errorf("docstore: commit transaction: %w", err)
	}
	if eb, ok := b.(changestream.EventBatch); ok && x.records {
		for _, ev := range x.events {
			eb.AddEvent(ev)
		}
	}
	metas, release, err := x.stageMultikey(b, colls)
	defer release()
	if err != nil {
		return err
	}
	if n, ok := b.(storage.CountNoter); ok {
		for _, c := range colls {
			n.NoteCounts(c.meta().ID, x.colls[c].dCount, x.colls[c].dSz)
		}
	}
	if opt.Extra != nil {
		if err := opt.Extra(b); err != nil {
			return err
		}
	}
	if err := b.Commit(opt.Sync); err != nil {
		return fmt.Errorf("docstore: commit transaction: %w", err)
	}
	x.s.txns.stamp(x.written)
	x.listCreated()
	x.publish(colls, metas)
	return nil
}

func (x *Txn) stageMultikey(b storage.Batch, colls []*Collection) (metas map[*Collection]func(), release func(), err error) {
	metas = map[*Collection]func(){}
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, c := range colls {
		tc := x.colls[c]
		if tc.multikey == nil {
			continue
		}
		t := &tx{c: c, st: c.state.Load(), b: b, multikey: tc.multikey}
		meta, rel, err := t.stageMultikey()
		if err != nil {
			return nil, release, err
		}
		releases = append(releases, rel)
		metas[c] = func() { c.publishMeta(meta) }
	}
	return metas, release, nil
}

func (x *Txn) publish(colls []*Collection, metas map[*Collection]func()) {
	for _, c := range colls {
		if pub, ok := metas[c]; ok {
			pub()
		}
		c.count.Add(x.colls[c].dCount)
		c.dataSize.Add(x.colls[c].dSz)
	}
	for _, f := range x.afterCommit {
		f()
	}
}

// stmtBatch buffers one statement's writes and events: a statement that
// fails leaves nothing in the transaction.
type stmtBatch struct {
	ops     []stmtOp
	size    int
	events  [][]byte
	records bool
}

type stmtOp struct {
	key []byte
	wsOp
}

var _ changestream.EventBatch = (*stmtBatch)(nil)

// errRangeInTxn refuses a range deletion inside a transaction: no
// statement that runs inside one deletes a range.
var errRangeInTxn = errors.New("docstore: range deletion inside a transaction")

func (b *stmtBatch) Set(key, value []byte) error {
	b.ops = append(b.ops, stmtOp{key: slices.Clone(key), wsOp: wsOp{value: slices.Clone(value)}})
	b.size += len(key) + len(value)
	return nil
}

func (b *stmtBatch) Delete(key []byte) error {
	b.ops = append(b.ops, stmtOp{key: slices.Clone(key), wsOp: wsOp{deleted: true}})
	b.size += len(key)
	return nil
}

func (b *stmtBatch) DeleteRange(_, _ []byte) error { return errRangeInTxn }

// Commit is never called: the statement's tx hands the batch to its
// transaction (Txn.absorb) instead.
func (b *stmtBatch) Commit(bool) error {
	return errors.New("docstore: a transaction's statement commits with its transaction")
}

func (b *stmtBatch) Len() int { return b.size }

func (b *stmtBatch) Close() error { return nil }

func (b *stmtBatch) AddEvent(ev []byte) { b.events = append(b.events, ev) }

func (b *stmtBatch) RecordsEvents() bool { return b.records }

// announce tells the TTL monitor what a statement's own commit would
// have: the dates of the TTL entries it added and its earliest expiry.
func (t *tx) announce() {
	t.announceTTLDates()
	if t.hasExpiry {
		t.c.store.hintExpiry(t.expiry)
	}
}

// ReadTxn is a transaction that only reads snap, a snapshot its caller
// owns: it never writes, so it is not counted open, and its end leaves
// snap open (snaphistory keeps such snapshots by cluster time).
func (s *Store) ReadTxn(snap storage.Snapshot) *Txn {
	return &Txn{s: s, ws: newWriteSet(), colls: map[*Collection]*txnColl{}, snap: snap}
}
