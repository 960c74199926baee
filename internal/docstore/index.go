package docstore

import (
	"fmt"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
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
func (c *Collection) CreateIndexes(ixs []*catalog.Index) (CreateIndexesResult, error) {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	res := CreateIndexesResult{Before: len(c.meta().Indexes)}
	added := 0
	for _, ix := range ixs {
		ok, err := c.addIndexLocked(ix)
		if err != nil {
			return res, err
		}
		if ok {
			added++
		}
	}
	res.After = len(c.meta().Indexes)
	res.AllExisted = added == 0
	if added > 0 {
		c.store.indexesChanged()
	}
	return res, nil
}

func (c *Collection) addIndexLocked(ix *catalog.Index) (bool, error) {
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
		_ = c.dropIndexLocked(def.Name)
		return false, err
	}
	done := c.meta().Clone()
	done.Indexes[len(done.Indexes)-1].Ready = true
	return true, c.saveMeta(done)
}

func (c *Collection) saveMeta(meta *catalog.Collection) error {
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := putMeta(b, meta); err != nil {
		return err
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
	if err := c.dropIndexLocked(name); err != nil {
		return err
	}
	c.store.indexesChanged()
	return nil
}

func (c *Collection) dropIndexLocked(name string) error {
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
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: drop index %s: %w", name, err)
	}
	c.setMeta(next)
	return nil
}

// ModifyIndex rewrites the named index's definition through fn (collMod's
// expireAfterSeconds and hidden changes). fn works on a copy.
func (c *Collection) ModifyIndex(name string, fn func(ix *catalog.Index) error) error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	next := c.meta().Clone()
	ix := next.Index(name)
	if ix == nil {
		return mongoerr.Newf(mongoerr.IndexNotFound, "cannot find index %s for ns %s", name, next.Namespace())
	}
	if err := fn(ix); err != nil {
		return err
	}
	if err := c.saveMeta(next); err != nil {
		return err
	}
	c.store.indexesChanged()
	return nil
}
