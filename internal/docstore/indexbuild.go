package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// Index builds (docs/design/0004, "Index builds"). A build holds the
// collection's schema lock only at its start and at its end, as mongod's
// builds have since 4.2, so that writes and the TTL monitor go on while it
// reads the documents. At its start the new indexes join the catalog not
// ready: every write from then on maintains them as it does a ready index,
// except that a unique key it duplicates is left for the build to judge
// at its end. The build then reads the documents in _id order, in
// batches; each batch holds every document's lock, so the documents it
// reads are as they are now, and writes the entries each lacks. A
// document a write changed behind the batches has its entries from that
// write; one it inserts ahead of them gets them from both, alike.

// A batch of a build reads buildBatchDocs documents, or fewer once it has
// written buildBatchEntries entries: every write to the collection waits
// for a batch under way.
const (
	buildBatchDocs    = 256
	buildBatchEntries = 4096
)

// buildRun is one build of a createIndexes command's indexes.
type buildRun struct {
	c    *Collection
	news []*catalog.Index
	ids  []uint32 // the catalog IDs of news
	each bool     // the collection was empty: one event per index
	uuid bson.Binary
	done chan struct{}
	// unique is true when a new index refuses duplicates.
	unique bool
	// onBatch, when set, is called after each batch, its locks released.
	onBatch   func()
	batchDocs int // buildBatchDocs, but in tests
	// total is the collection's count at the start, and scanned the
	// documents read so far: currentOp's progress.
	total   int64
	scanned atomic.Int64

	mu sync.Mutex
	// duplicated is, per index ID, the keys that writes added while another
	// document may have held them: the build checks them at its end.
	duplicated map[uint32][][]byte
}

// builds is a collection's index builds under way.
type builds struct {
	mu   sync.Mutex
	runs []*buildRun
	// n is len(runs), read without mu by every batch of the TTL monitor.
	n atomic.Int32
}

func (b *builds) add(r *buildRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = append(b.runs, r)
	b.n.Store(int32(len(b.runs)))
}

func (b *builds) remove(r *buildRun) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = slices.DeleteFunc(b.runs, func(x *buildRun) bool { return x == r })
	b.n.Store(int32(len(b.runs)))
	close(r.done)
}

// of is the build of the index with the given ID, or nil.
func (b *builds) of(id uint32) *buildRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.runs {
		if slices.Contains(r.ids, id) {
			return r
		}
	}
	return nil
}

func (b *builds) running() bool { return b.n.Load() > 0 }

// noteDuplicated records key of a unique index being built, which a write
// added without looking for another holder.
func (b *builds) noteDuplicated(ix *indexState, key []byte) {
	r := b.of(ix.def.ID)
	if r == nil {
		return // a build of a primary that died; the new one drops it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.duplicated[ix.def.ID] = append(r.duplicated[ix.def.ID], bytes.Clone(key))
}

// refuseWhileBuilding fails an operation that cannot run beside an index
// build, as mongod's renameCollection does.
func (c *Collection) refuseWhileBuilding() error {
	if !c.builds.running() {
		return nil
	}
	return mongoerr.Newf(mongoerr.BackgroundOperationInProgressForNamespace,
		"cannot perform operation: an index build is currently running for collection with UUID: %s", bsonutil.FormatUUID(c.meta().UUID.Data))
}

// newBuildLocked records news as not ready and starts their build; the
// caller holds schemaMu.
func (c *Collection) newBuildLocked(news []*catalog.Index) (*buildRun, error) {
	total := c.count.Load()
	uuid := newUUID()
	first, err := c.startBuildLocked(news, uuid)
	if err != nil {
		return nil, err
	}
	r := &buildRun{c: c, news: news, each: total == 0, uuid: uuid, total: total, done: make(chan struct{}), batchDocs: buildBatchDocs, duplicated: map[uint32][][]byte{}}
	for i, def := range c.meta().Indexes[first:] {
		r.ids = append(r.ids, def.ID)
		r.unique = r.unique || news[i].RefusesDuplicates()
	}
	c.builds.add(r)
	return r, nil
}

// run builds the indexes and makes them ready, or drops them.
func (r *buildRun) run(ctx context.Context) (CreateIndexesResult, error) {
	c := r.c
	err := r.scan(ctx)
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	defer c.builds.remove(r)
	var ixs []*indexState
	if err == nil {
		ixs, err = r.indexesIn(c.state.Load())
	}
	if err == nil {
		err = r.checkDuplicatedLocked(ixs)
	}
	if err != nil {
		if c.dropped.Load() {
			return CreateIndexesResult{}, err
		}
		if !errors.Is(err, errBuildAborted) {
			err = buildFailed(c.meta(), r.uuid, err)
		}
		return CreateIndexesResult{}, errors.Join(err, c.abortBuildLocked(r.ids))
	}
	if err := c.readyLocked(r.news, r.each); err != nil {
		return CreateIndexesResult{}, err
	}
	c.store.indexesChanged()
	return CreateIndexesResult{After: readyIndexes(c.meta())}, nil
}

// errBuildAborted marks a build that another operation stopped: its error
// is IndexBuildAborted, not a failure of the build's own.
var errBuildAborted = errors.New("index build aborted")

// indexesIn finds the build's indexes in st, or fails as mongod fails a
// build that a drop aborted.
func (r *buildRun) indexesIn(st *collState) ([]*indexState, error) {
	why := ""
	ixs := make([]*indexState, 0, len(r.ids))
	for _, id := range r.ids {
		ix := st.indexByID(id)
		if ix == nil || ix.def.Ready {
			why = "index dropped by dropIndexes"
			break
		}
		ixs = append(ixs, ix)
	}
	if r.c.dropped.Load() {
		why = "collection dropped"
	}
	if why == "" {
		return ixs, nil
	}
	return nil, errors.Join(errBuildAborted, mongoerr.Newf(mongoerr.IndexBuildAborted,
		"Index build aborted: %s: %s on %s", bsonutil.FormatUUID(r.uuid.Data), why, st.meta.Namespace()))
}

// scan indexes the documents, batch by batch.
func (r *buildRun) scan(ctx context.Context) error {
	from := docPrefix(r.c.meta().ID)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("docstore: index build: %w", err)
		}
		var last []byte
		var n int
		err := retrying(func() (err error) { last, n, err = r.batch(ctx, from); return err },
			"write conflict: an index build could not lock the documents it reads")
		if err != nil || last == nil {
			return err
		}
		r.scanned.Add(int64(n))
		if r.onBatch != nil {
			r.onBatch()
		}
		from = append(last, 0) // the next key
	}
}

// batch indexes a batch of documents from the key from on, under every
// document lock of the collection, and returns the last one's key (nil:
// none was left) and how many it read.
func (r *buildRun) batch(ctx context.Context, from []byte) ([]byte, int, error) {
	c := r.c
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	st := c.state.Load()
	ixs, err := r.indexesIn(st)
	if err != nil {
		return nil, 0, err
	}
	l := &lockSet{c: c}
	defer l.release()
	l.lockAllStripes()
	if r.unique {
		l.lockUnique()
	}
	it, err := c.store.eng.NewIter(from, prefixEnd(docPrefix(st.meta.ID)))
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	t := c.newTx(l)
	last, n, err := r.indexDocs(ctx, t, ixs, it)
	if err != nil || last == nil {
		t.abort()
		return nil, 0, err
	}
	return last, n, t.commit(WriteOptions{})
}

// indexDocs indexes the iterator's next batch of documents in t, looking
// at ctx before each: one document may hold thousands of entries.
func (r *buildRun) indexDocs(ctx context.Context, t *tx, ixs []*indexState, it storage.Iterator) (last []byte, docs int, err error) {
	p := docPrefix(t.st.meta.ID)
	keys := batchKeys{claimed: map[string][]byte{}, gone: map[string]bool{}}
	entries := 0
	for ok := it.First(); ok && docs < r.batchDocs && entries < buildBatchEntries; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, 0, fmt.Errorf("docstore: index build: %w", err)
		}
		id := it.Key()[len(p):]
		if b := t.c.inFlight.BatchOf(id); b != nil {
			return nil, 0, errInFlight{batch: b} // the batch waits for it, then reads again
		}
		d := &stored{idEnc: bytes.Clone(id), raw: bytes.Clone(it.Value())}
		if err := d.decode(); err != nil {
			return nil, 0, err
		}
		n, err := r.indexDoc(t, ixs, d, &keys)
		if err != nil {
			return nil, 0, err
		}
		last, docs, entries = append(last[:0], it.Key()...), docs+1, entries+n
	}
	return last, docs, it.Error()
}

// batchKeys is what a batch of a unique index's build did: the keys it
// gave, with their documents, and the expired documents it deleted.
type batchKeys struct {
	claimed map[string][]byte
	gone    map[string]bool
}

// indexDoc writes the entries document d lacks, and returns how many it
// has.
func (r *buildRun) indexDoc(t *tx, ixs []*indexState, d *stored, keys *batchKeys) (int, error) {
	if r.unique && r.c.expiredNow(d.doc) {
		// An expired document holds no unique key: it is deleted, as a
		// write deletes an expired holder of the key it takes.
		if keys.gone[string(d.idEnc)] {
			return 0, nil
		}
		keys.gone[string(d.idEnc)] = true
		return 0, t.expireDoc(d)
	}
	n := 0
	for _, ix := range ixs {
		ks, err := ix.entryKeys(d.doc)
		if err != nil {
			return 0, err
		}
		t.noteMultikey(ix, d.doc)
		for _, k := range ks {
			if err := r.put(t, ix, k, d, keys); err != nil {
				return 0, err
			}
		}
		n += len(ks)
	}
	return n, nil
}

func (r *buildRun) put(t *tx, ix *indexState, k []byte, d *stored, keys *batchKeys) error {
	ek := entryKey(ix, k, d.idEnc)
	if ix.def.TTL {
		// A write's entry carries the document's deletion record, which
		// the build's bare _id would replace.
		if _, err := t.r.Get(ek); err == nil {
			return nil
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	if ix.def.RefusesDuplicates() {
		held := string(ix.prefix) + string(k)
		if other, ok := keys.claimed[held]; ok && !bytes.Equal(other, d.idEnc) {
			return r.c.dupKeyError(ix, d.doc)
		}
		if n, _, err := t.liveHolders(ix, k, d.idEnc, keys.gone); err != nil || n > 0 {
			if err != nil {
				return err
			}
			return r.c.dupKeyError(ix, d.doc)
		}
		keys.claimed[held] = d.idEnc
	}
	return t.b.Set(ek, d.idEnc)
}

// checkDuplicatedLocked fails with E11000 when a key that writes added to
// a unique index during the build has two live holders, and deletes its
// expired holders; the caller holds schemaMu, so no write adds another.
func (r *buildRun) checkDuplicatedLocked(ixs []*indexState) error {
	r.mu.Lock()
	duplicated := r.duplicated // a transaction's statement may still add to it
	r.duplicated = map[uint32][][]byte{}
	r.mu.Unlock()
	return retrying(func() error { return r.checkKeys(ixs, duplicated) },
		"write conflict: an index build could not check its unique keys")
}

func (r *buildRun) checkKeys(ixs []*indexState, duplicated map[uint32][][]byte) error {
	t, gone := r.c.newTx(nil), map[string]bool{}
	for _, ix := range ixs {
		for _, key := range duplicated[ix.def.ID] {
			n, doc, err := t.liveHolders(ix, key, nil, gone)
			if err == nil && n > 1 {
				err = r.c.dupKeyError(ix, doc)
			}
			if err != nil {
				t.abort()
				return err
			}
		}
	}
	return t.commit(WriteOptions{})
}

// liveHolders counts the live documents other than self (nil: none) that
// hold key in ix, and returns one of them. It deletes in t the expired
// holders that gone, the documents t deleted, does not list yet, and adds
// them; a holder in an expiry batch in flight asks the caller to wait.
func (t *tx) liveHolders(ix *indexState, key, self []byte, gone map[string]bool) (n int, doc bson.D, err error) {
	lo := append(bytes.Clone(ix.prefix), key...)
	it, err := t.c.store.eng.NewIter(lo, prefixEnd(lo))
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id := ttlentry.ID(it.Key(), it.Value())
		if bytes.Equal(id, self) || gone[string(id)] {
			continue
		}
		id = bytes.Clone(id)
		live, expired, err := t.liveHolder(ix, key, id)
		if err != nil {
			return 0, nil, err
		}
		if expired {
			gone[string(id)] = true
		}
		if live != nil {
			n, doc = n+1, live.doc
		}
	}
	return n, doc, it.Error()
}

// IndexBuild is a build under way, as currentOp shows it.
type IndexBuild struct{ r *buildRun }

// UUID names the build.
func (b IndexBuild) UUID() bson.Binary { return b.r.uuid }

// Specs are the specifications of the indexes it builds.
func (b IndexBuild) Specs() []bson.D {
	specs := make([]bson.D, len(b.r.news))
	for i, ix := range b.r.news {
		specs[i] = ix.Spec
	}
	return specs
}

// Progress is how many documents the build has read of the collection's
// count when it started.
func (b IndexBuild) Progress() (done, total int64) { return b.r.scanned.Load(), b.r.total }

// readyIndexes counts the indexes of meta that are not being built.
func readyIndexes(meta *catalog.Collection) int {
	n := 0
	for i := range meta.Indexes {
		if meta.Indexes[i].Ready {
			n++
		}
	}
	return n
}
