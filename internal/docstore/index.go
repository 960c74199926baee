package docstore

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// buildBatchDocs is how many documents one index-build batch covers.
const buildBatchDocs = 1000

// CreateIndexesResult is what createIndexes reports.
type CreateIndexesResult struct {
	Before, After int
	// AllExisted is true when every requested index was already there.
	AllExisted bool
}

// CreateIndexes adds the given (already parsed) indexes, building each over
// the existing documents. A build first records the index as not ready, so
// a crash mid-build leaves an index that the next open drops: either no
// index or a complete one.
//
// As on mongod, an empty collection's indexes are each reported by an
// event of their own, written with the index; a build over documents
// reports every index it built in one event, written in the one catalog
// write that makes them all ready (mongod's commitIndexBuild entry): a
// crash before it leaves none of them, and no event.
func (c *Collection) CreateIndexes(ixs []*catalog.Index) (CreateIndexesResult, error) {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	res := CreateIndexesResult{Before: len(c.meta().Indexes)}
	each := c.count.Load() == 0
	var built []*catalog.Index
	for _, ix := range ixs {
		ok, err := c.addIndexLocked(ix, each)
		if err != nil {
			if !each {
				err = errors.Join(err, c.readyLocked(built))
			}
			return res, err
		}
		if ok {
			built = append(built, ix)
		}
	}
	if !each {
		if err := c.readyLocked(built); err != nil {
			return res, err
		}
	}
	res.After = len(c.meta().Indexes)
	res.AllExisted = len(built) == 0
	if len(built) > 0 {
		c.store.indexesChanged()
	}
	return res, nil
}

// readyLocked marks the built indexes of a build over documents ready, in
// one catalog write with their createIndexes event.
func (c *Collection) readyLocked(built []*catalog.Index) error {
	if len(built) == 0 {
		return nil
	}
	next := c.meta().Clone()
	specs := make([]bson.D, len(built))
	for i, ix := range built {
		specs[i] = ix.Spec
		next.Index(ix.Name).Ready = true
	}
	return c.saveMeta(next, indexesEvent(changestream.OpCreateIndexes, next, specs...))
}

// addIndexLocked builds ix. report (an empty collection) makes it ready
// in a write with its createIndexes event; otherwise it stays not ready
// for readyLocked.
func (c *Collection) addIndexLocked(ix *catalog.Index, report bool) (bool, error) {
	meta := c.meta()
	exists, err := catalog.CheckNew(meta.Indexes, ix)
	if err != nil || exists {
		return false, err
	}
	if len(meta.Indexes) >= catalog.MaxIndexes {
		return false, mongoerr.Newf(mongoerr.CannotCreateIndex, "add index fails, too many indexes for %s key:%s", meta.Namespace(), bsonutil.Format(ix.KeyPattern()))
	}
	if ix.Partial != nil {
		if _, err := query.NewFilter(ix.Partial); err != nil {
			return false, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: %s", bsonutil.Format(ix.Spec), mongoerr.As(err).Msg)
		}
	}
	next := meta.Clone()
	def := *ix
	def.ID, def.Ready = next.NextIndexID, false
	next.NextIndexID++
	next.Indexes = append(next.Indexes, def)
	if err := c.saveMeta(next); err != nil {
		return false, err
	}
	if err := c.buildLocked(len(next.Indexes) - 1); err != nil {
		_ = c.dropIndexLocked(def.Name, false)
		return false, err
	}
	if !report {
		return true, nil
	}
	done := c.meta().Clone()
	done.Indexes[len(done.Indexes)-1].Ready = true
	return true, c.saveMeta(done, indexesEvent(changestream.OpCreateIndexes, done, def.Spec))
}

// saveMeta writes the collection's catalog entry, with the change events
// that describe the change.
func (c *Collection) saveMeta(meta *catalog.Collection, evs ...*changestream.Event) error {
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := putMeta(b, meta); err != nil {
		return err
	}
	for _, ev := range evs {
		addCatalogEvent(b, ev)
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: save catalog of %s: %w", meta.Namespace(), err)
	}
	c.setMeta(meta)
	return nil
}

// buildLocked writes the entries of index i for every stored document.
func (c *Collection) buildLocked(i int) error {
	st := c.state.Load()
	ix := st.indexes[i]
	b := &indexBuild{c: c, ix: ix, st: st}
	p := docPrefix(st.meta.ID)
	it, err := c.store.eng.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := b.add(it.Key()[len(p):], it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return b.flush()
}

type indexBuild struct {
	c       *Collection
	ix      *indexState
	st      *collState
	t       *tx
	n       int
	pending map[string][]byte // unique keys written in the open batch
}

func (b *indexBuild) add(idEnc, raw []byte) error {
	doc, err := bsonutil.DecodeD(raw, 0)
	if err != nil {
		return fmt.Errorf("docstore: index build: decode: %w", err)
	}
	if b.t == nil {
		b.t = &tx{c: b.c, st: b.st, b: b.c.store.eng.NewBatch()}
		b.pending = map[string][]byte{}
	}
	d := &stored{idEnc: append([]byte(nil), idEnc...), raw: raw, doc: doc}
	keys, err := b.ix.entryKeys(doc)
	if err != nil {
		return err
	}
	b.t.noteMultikey(b.ix, doc)
	for _, k := range keys {
		if err := b.put(k, d); err != nil {
			return err
		}
	}
	if b.n++; b.n%buildBatchDocs == 0 {
		return b.flush()
	}
	return nil
}

func (b *indexBuild) put(k []byte, d *stored) error {
	if b.ix.def.Unique {
		if other, ok := b.pending[string(k)]; ok && string(other) != string(d.idEnc) {
			return b.c.dupKeyError(b.ix, d.doc)
		}
		if err := b.t.checkUnique(b.ix, k, d); err != nil {
			return err
		}
		b.pending[string(k)] = d.idEnc
	}
	return b.t.b.Set(entryKey(b.ix, k, d.idEnc), d.idEnc)
}

func (b *indexBuild) flush() error {
	if b.t == nil {
		return nil
	}
	t := b.t
	b.t = nil
	return t.commit(WriteOptions{})
}

// DropIndex removes the named index and its entries.
func (c *Collection) DropIndex(name string) error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	if err := c.dropIndexLocked(name, true); err != nil {
		return err
	}
	c.store.indexesChanged()
	return nil
}

// dropIndexLocked removes the named index; report adds its dropIndexes
// event (not for a build that failed, which no event announced).
func (c *Collection) dropIndexLocked(name string, report bool) error {
	meta := c.meta()
	next := meta.Clone()
	next.Indexes = next.Indexes[:0]
	var gone *catalog.Index
	for i := range meta.Indexes {
		if meta.Indexes[i].Name == name {
			gone = &meta.Indexes[i]
			continue
		}
		next.Indexes = append(next.Indexes, meta.Indexes[i])
	}
	if gone == nil {
		return mongoerr.Newf(mongoerr.IndexNotFound, "index not found with name [%s]", name)
	}
	b := c.store.eng.NewBatch()
	defer b.Close()
	p := indexPrefix(meta.ID, gone.ID)
	if err := b.DeleteRange(p, prefixEnd(p)); err != nil {
		return err
	}
	if err := putMeta(b, next); err != nil {
		return err
	}
	if report {
		addCatalogEvent(b, indexesEvent(changestream.OpDropIndexes, next, gone.Spec))
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: drop index %s: %w", name, err)
	}
	c.setMeta(next)
	return nil
}

// ModifyIndex rewrites the named index's definition through fn in a
// write of its own, with no event (collMod uses Edit). fn works on a copy.
func (c *Collection) ModifyIndex(name string, fn func(ix *catalog.Index) error) error {
	e := c.Edit()
	defer e.Close()
	if err := e.ModifyIndex(name, fn); err != nil {
		return err
	}
	return e.Commit(nil)
}
