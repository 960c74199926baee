package docstore

import (
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

// An insert command's documents commit in groups: one batch, and in a
// replica set one entry of the log and one round of raft, for up to
// InsertGroupDocs documents or insertGroupBytes of them, as mongod groups
// them into one storage transaction (internalInsertMaxBatchSize and
// insertVectorMaxBytes). One round per document made a replica set's
// bulk insert wait for a round of fsyncs for each document.
const (
	InsertGroupDocs  = 64
	insertGroupBytes = 256 << 10
)

// GroupDoc is one document for InsertGroup, with its own write options:
// each statement of a retryable write has its own record (Extra).
type GroupDoc struct {
	Doc bson.D
	Opt WriteOptions
}

// InsertGroup inserts docs in order, each with its own result in errs,
// as Insert would one by one. With ordered it stops at the first failure;
// attempted is how many documents have a result. A collection whose
// writes must see each other's (a unique secondary index, capped, an
// lruLimit) commits each document on its own; the others commit runs of
// documents together, a run ending before an _id it already holds.
func (c *Collection) InsertGroup(docs []GroupDoc, ordered bool) (errs []error, attempted int) {
	if len(docs) > 0 && docs[0].Opt.Txn != nil {
		return docs[0].Opt.Txn.insertGroup(c, docs, ordered)
	}
	var room *insertRoom // an insertOne's
	if len(docs) == 1 {
		room = new(insertRoom)
		errs = room.errs[:]
	} else {
		errs = make([]error, len(docs))
	}
	preps := make([]*stored, len(docs))
	for i := 0; i < len(docs); {
		end := c.prepareRun(docs, preps, errs, i, room)
		if end > i {
			if failed := c.insertRun(docs[i:end], preps[i:end], errs[i:end], ordered, room); failed >= 0 && ordered {
				return errs, i + failed + 1
			}
		}
		if end < len(docs) && errs[end] != nil {
			if ordered {
				return errs, end + 1
			}
			end++
		}
		i = end
	}
	return errs, len(docs)
}

// insertRoom is what a one-document InsertGroup (an insertOne) needs in
// one allocation: its result, its prepared document and its first
// groupTx's call (nil: a group of several documents).
type insertRoom struct {
	errs [1]error
	doc  firstRoom[prepared]
	call firstRoom[groupCall]
}

func (r *insertRoom) docs() *firstRoom[prepared] {
	if r == nil {
		return nil
	}
	return &r.doc
}

func (r *insertRoom) calls() *firstRoom[groupCall] {
	if r == nil {
		return nil
	}
	return &r.call
}

// prepareRun prepares docs from i on and returns the end of the run that
// starts at i: at its size limits, before an _id already in it, or at a
// document that fails its checks (its error in errs).
func (c *Collection) prepareRun(docs []GroupDoc, preps []*stored, errs []error, i int, room *insertRoom) int {
	single := !c.groupable()
	var ids map[string]bool // made at a run's second document
	size := 0
	for j := i; j < len(docs); j++ {
		if j > i && (single || j-i == InsertGroupDocs || size >= insertGroupBytes) {
			return j
		}
		if preps[j] == nil {
			p, err := c.prepareStoredIn(room.docs().take(), docs[j])
			if err != nil {
				errs[j] = err
				return j
			}
			preps[j] = p
		}
		if j > i {
			if ids == nil {
				ids = map[string]bool{string(preps[i].idEnc): true}
			}
			if ids[string(preps[j].idEnc)] {
				return j
			}
			ids[string(preps[j].idEnc)] = true
		}
		size += len(preps[j].raw)
	}
	return len(docs)
}

// groupable reports whether documents may commit together: none of its
// inserts needs to see another's uncommitted entries.
func (c *Collection) groupable() bool { return c.state.Load().groupable() }

func (st *collState) groupable() bool {
	if st.meta.Capped || len(st.lru) > 0 {
		return false
	}
	for _, ix := range st.indexes[1:] {
		if ix.def.RefusesDuplicates() {
			return false
		}
	}
	return true
}

// prepareStored checks one new document against the collection's rules
// and its size, and encodes it.
func (c *Collection) prepareStored(d GroupDoc) (*stored, error) {
	return c.prepareStoredIn(new(prepared), d)
}

// prepareStoredIn is prepareStored into p, which must be unused.
func (c *Collection) prepareStoredIn(p *prepared, d GroupDoc) (*stored, error) {
	if err := c.checkRules(c.state.Load(), d.Doc, nil, d.Opt); err != nil {
		return nil, err
	}
	raw, err := bsonutil.Marshal(d.Doc)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "cannot encode document: %v", err)
	}
	if len(raw) > MaxDocumentSize {
		return nil, mongoerr.Newf(mongoerr.BadValue, "object to insert too large. size in bytes: %d, max size: %d", len(raw), MaxDocumentSize)
	}
	id, _ := lookupID(d.Doc)
	p.stored = stored{raw: raw, doc: d.Doc}
	idEnc := keyenc.AppendValue(p.id[:0], id)
	p.idEnc = idEnc[:len(idEnc):len(idEnc)]
	return &p.stored, nil
}

// prepared is a stored document prepareStored made, with room for its
// _id's encoding (capped: never written after): one allocation, not two.
type prepared struct {
	stored
	id [24]byte
}

// insertRun inserts a run of prepared documents, as one batch while none
// fails. When one fails, the documents before it commit together and it
// has its own error. It returns the index of the first failure, or -1.
func (c *Collection) insertRun(docs []GroupDoc, preps []*stored, errs []error, ordered bool, room *insertRoom) (failed int) {
	failed = -1
	for start := 0; start < len(preps) && (failed < 0 || !ordered); {
		n, docErr, commitErr := c.commitPrefix(docs[start:], preps[start:], room)
		fail := -1
		switch {
		case commitErr != nil:
			for j := start; j < start+n; j++ {
				errs[j] = commitErr
			}
			fail = start
		case docErr != nil:
			errs[start+n] = docErr
			fail, n = start+n, n+1
		}
		if failed < 0 {
			failed = fail
		}
		start += n
	}
	return failed
}

// commitPrefix commits, in one batch, the longest prefix of a run whose
// documents all insert: n documents. docErr is then the error of the
// document after them (nil when the run went in whole); commitErr is the
// batch's own failure, which those n documents share.
func (c *Collection) commitPrefix(docs []GroupDoc, preps []*stored, room *insertRoom) (n int, docErr, commitErr error) {
	return longestPrefix(len(preps), func(end int) (int, error, error) { return c.tryRun(docs[:end], preps[:end], room) })
}

// longestPrefix commits the longest prefix of a run of size documents
// whose documents all apply. try(end) commits the first end documents in
// one batch: k of them (fewer when the batch filled up), or none, k then
// the first that failed and docErr its error. Each failure makes the next
// try shorter, so the last failure is the earliest. It returns the
// documents committed, n, and docErr, the error of the document right
// after them when the run stopped there; or commitErr, the batch's own
// failure, with n the documents that batch held.
func longestPrefix(size int, try func(end int) (k int, docErr, commitErr error)) (n int, docErr, commitErr error) {
	for end := size; ; {
		k, err, cerr := try(end)
		switch {
		case cerr != nil:
			return end, nil, cerr
		case err == nil && k < end:
			return k, nil, nil // full: whatever failed after end comes in a later batch
		case err == nil:
			return k, docErr, nil
		case k == 0:
			return 0, err, nil
		}
		docErr, end = err, k
	}
}

// tryRun commits every document of the run in one batch, or none: then k
// is the first that failed and docErr its error. commitErr is the batch's
// own failure, which every document shares.
func (c *Collection) tryRun(docs []GroupDoc, preps []*stored, room *insertRoom) (k int, docErr, commitErr error) {
	encs := make([][]byte, len(preps))
	var extras []func(storage.Batch) error // only a retryable write's
	for i, p := range preps {
		encs[i] = p.idEnc
		if e := docs[i].Opt.Extra; e != nil {
			if extras == nil {
				extras = make([]func(storage.Batch) error, len(preps))
			}
			extras[i] = e
		}
	}
	dropped := func() error {
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s was dropped", c.Namespace())
	}
	return c.groupTx(room.calls().take(), encs, docs[0].Opt, extrasOf(extras), dropped,
		func(t *tx, i int) error { return t.insert(preps[i]) })
}

// errRunFull, from a step of groupTx, ends the batch before document i:
// the documents before it commit.
var errRunFull = errors.New("docstore: the batch is full")

// groupTx stages the documents of idEncs into one batch under their locks
// (held in g, which must be unused), step staging document i into t, and
// commits it with extra(k)'s writes (durable as opt's Sync and Durable
// ask): k documents, fewer than idEncs when a step said the batch was
// full. An error of step's, but for the lock and in-flight waits that
// retrying handles, is document i's own: nothing commits, and k and
// docErr say which. err is the batch's own failure, or dropped's when the
// collection is gone.
func (c *Collection) groupTx(g *groupCall, idEncs [][]byte, opt WriteOptions, extra func(k int) func(storage.Batch) error, dropped func() error, step func(t *tx, i int) error) (k int, docErr, err error) {
	g.sw = makeSyncWait(opt)
	sw := &g.sw
	err = retrying(func() error {
		k, docErr = len(idEncs), nil
		return c.lockedIDs(&g.locks, idEncs, func(l *lockSet) error {
			if c.dropped.Load() {
				return dropped()
			}
			t := c.newTxIn(g.txs.take(), l)
			t.durable = sw
			for i := range idEncs {
				err := step(t, i)
				if errors.Is(err, errRunFull) {
					k = i
					break
				}
				if err != nil {
					t.abort()
					if errors.Is(err, errRetry) || errors.As(err, new(errInFlight)) {
						return err
					}
					k, docErr = i, err
					return nil
				}
			}
			t.extra = extra(k)
			return t.commit(WriteOptions{})
		})
	}, "write conflict: another write holds a document this write must change")
	if docErr != nil {
		return k, docErr, nil
	}
	return k, nil, c.finish(sw, err)
}

// groupCall is what one write holds through its attempts (groupTx's,
// Insert's): its locks (reset by each, lockedIDs or lockedOnce), its
// durability wait and its first attempt's tx, in one allocation.
type groupCall struct {
	locks lockSet
	sw    syncWait
	txs   firstRoom[tx]
}

// lockedIDs runs fn holding, in l (reset first, released after), the
// schema lock shared and the stripes of every document of idEncs, taken
// in stripe order so that two runs never wait for each other crosswise.
func (c *Collection) lockedIDs(l *lockSet, idEncs [][]byte, fn func(l *lockSet) error) error {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	*l = lockSet{c: c}
	defer l.release()
	var want [lockStripes]bool
	for _, enc := range idEncs {
		want[c.stripeOf(enc)] = true
	}
	for i, w := range want {
		if w {
			l.lockStripe(i)
		}
	}
	return fn(l)
}

// noExtras is extrasOf(nil): no document of the batch has writes of its
// own, as in every write but a retryable one.
func noExtras(int) func(storage.Batch) error { return nil }

// extrasOf gives groupTx the writes of the documents a batch holds:
// extras[i] is document i's (nil: none), and a batch of the first k
// documents writes those of the k alone. A retryable write's record of a
// statement must commit with the statement's change, never before it.
func extrasOf(extras []func(storage.Batch) error) func(k int) func(storage.Batch) error {
	if extras == nil {
		return noExtras
	}
	return func(k int) func(storage.Batch) error {
		held := extras[:k]
		if !slices.ContainsFunc(held, func(e func(storage.Batch) error) bool { return e != nil }) {
			return nil
		}
		return func(b storage.Batch) error {
			for _, e := range held {
				if e == nil {
					continue
				}
				if err := e(b); err != nil {
					return err
				}
			}
			return nil
		}
	}
}
