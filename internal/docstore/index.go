package docstore

import (
	"context"
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

// CreateIndexes adds the given (already parsed) indexes, building them
// over the existing documents, all or none: mongod builds a command's
// indexes as one build, and a failure of any aborts them all. Every new
// index is first recorded as not ready, in one write, so a crash mid-build
// leaves indexes that the next open drops; one write then makes them all
// ready with their createIndexes events, or drops them all without one.
//
// As on mongod, an empty collection's indexes are each reported by an
// event of their own and a build over documents reports every index it
// built in one event (mongod's commitIndexBuild entry).
func (c *Collection) CreateIndexes(ixs []*catalog.Index) (CreateIndexesResult, error) {
	return c.CreateIndexesContext(context.Background(), ixs)
}

// CreateIndexesContext is CreateIndexes whose build over the stored
// documents stops, and is abandoned as a failed build is, once ctx ends;
// the error then wraps ctx's.
func (c *Collection) CreateIndexesContext(ctx context.Context, ixs []*catalog.Index) (CreateIndexesResult, error) {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	res := CreateIndexesResult{Before: len(c.meta().Indexes)}
	each := c.count.Load() == 0
	news, err := c.newIndexesLocked(ixs)
	if err != nil || len(news) == 0 {
		res.After, res.AllExisted = res.Before, err == nil
		return res, err
	}
	first, err := c.startBuildLocked(news)
	if err != nil {
		return res, err
	}
	for i := range news {
		if err := c.buildLocked(ctx, first+i); err != nil {
			return res, errors.Join(buildFailed(c.meta(), err), c.abortBuildLocked(news))
		}
	}
	if err := c.readyLocked(news, each); err != nil {
		return res, err
	}
	res.After = len(c.meta().Indexes)
	c.store.indexesChanged()
	return res, nil
}

// newIndexesLocked checks every requested index against the collection's
// and the ones before it in the request, before anything is built, as
// mongod does, and returns those not already there.
func (c *Collection) newIndexesLocked(ixs []*catalog.Index) ([]*catalog.Index, error) {
	meta := c.meta()
	have := append([]catalog.Index(nil), meta.Indexes...)
	var news []*catalog.Index
	for _, ix := range ixs {
		exists, err := catalog.CheckNew(have, ix)
		if err != nil {
			return nil, err
		}
		if exists {
			continue
		}
		if len(have) >= catalog.MaxIndexes {
			return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "add index fails, too many indexes for %s key:%s", meta.Namespace(), bsonutil.Format(ix.KeyPattern()))
		}
		if ix.Partial != nil {
			if _, err := query.NewFilter(ix.Partial); err != nil {
				return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: %s", bsonutil.Format(ix.Spec), mongoerr.As(err).Msg)
			}
		}
		have = append(have, *ix)
		news = append(news, ix)
	}
	return news, nil
}

// startBuildLocked records the new indexes as not ready, in one write, and
// returns the position of the first of them in the catalog entry.
func (c *Collection) startBuildLocked(news []*catalog.Index) (int, error) {
	next := c.meta().Clone()
	first := len(next.Indexes)
	for _, ix := range news {
		def := *ix
		def.ID, def.Ready = next.NextIndexID, false
		next.NextIndexID++
		next.Indexes = append(next.Indexes, def)
	}
	return first, c.saveMeta(next)
}

// readyLocked marks the built indexes ready in one catalog write with
// their createIndexes events: one per index (each: an empty collection)
// or one listing them all.
func (c *Collection) readyLocked(built []*catalog.Index, each bool) error {
	next := c.meta().Clone()
	specs := make([]bson.D, len(built))
	for i, ix := range built {
		specs[i] = ix.Spec
		next.Index(ix.Name).Ready = true
	}
	if !each {
		return c.saveMeta(next, changestream.IndexesEvent(changestream.OpCreateIndexes, next, specs...))
	}
	evs := make([]*changestream.Event, len(specs))
	for i, spec := range specs {
		evs[i] = changestream.IndexesEvent(changestream.OpCreateIndexes, next, spec)
	}
	return c.saveMeta(next, evs...)
}

// abortBuildLocked drops every index of a failed build, their entries and
// catalog records, in one write and with no event: none announced them.
func (c *Collection) abortBuildLocked(news []*catalog.Index) error {
	meta := c.meta()
	next := meta.Clone()
	next.Indexes = next.Indexes[:0]
	b := c.store.eng.NewBatch()
	defer b.Close()
	for i := range meta.Indexes {
		ix := &meta.Indexes[i]
		if ix.Ready || !building(news, ix.Name) {
			next.Indexes = append(next.Indexes, *ix)
			continue
		}
		p := indexPrefix(meta.ID, ix.ID)
		if err := b.DeleteRange(p, prefixEnd(p)); err != nil {
			return err
		}
	}
	if err := putMeta(b, next); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: abort index build of %s: %w", meta.Namespace(), err)
	}
	c.setMeta(next)
	return nil
}

func building(news []*catalog.Index, name string) bool {
	for _, ix := range news {
		if ix.Name == name {
			return true
		}
	}
	return false
}

// buildFailed gives an error of the build's scan (a duplicate key, a
// document the index cannot hold) the context mongod's createIndexes
// adds to a failed build: a build UUID and the collection's.
func buildFailed(meta *catalog.Collection, err error) error {
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		return err
	}
	return &mongoerr.Error{
		Code:  me.Code,
		Msg:   fmt.Sprintf("Index build failed: %s: Collection %s ( %s ) :: caused by :: %s", bsonutil.FormatUUID(newUUID().Data), meta.Namespace(), bsonutil.FormatUUID(meta.UUID.Data), me.Msg),
		Extra: me.Extra,
	}
}

// saveMeta writes the collection's catalog entry, with the change events
// that describe the change.
func (c *Collection) saveMeta(meta *catalog.Collection, evs ...*changestream.Event) error {
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := putMeta(b, meta); err != nil {
		return err
	}
	for i := range meta.Indexes {
		// Warnings turned off leave no mark: turned on again, they start
		// as a new index's do, not from where they stopped (warn.go).
		if ix := &meta.Indexes[i]; ix.TTL && ix.WarnBefore == 0 {
			if err := b.Delete(warnedKey(meta.ID, ix.ID)); err != nil {
				return err
			}
		}
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

// buildLocked writes the entries of index i for every stored document,
// looking at ctx before each.
func (c *Collection) buildLocked(ctx context.Context, i int) error {
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
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("docstore: index build of %s: %w", ix.def.Name, err)
		}
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
		b.t = &tx{c: b.c, st: b.st, b: b.c.store.eng.NewBatch(), r: b.c.store.eng}
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
		if _, err := b.t.checkUnique(b.ix, k, d); err != nil {
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
	if err := b.Delete(warnedKey(meta.ID, gone.ID)); err != nil {
		return err
	}
	if err := putMeta(b, next); err != nil {
		return err
	}
	if report {
		addCatalogEvent(b, changestream.IndexesEvent(changestream.OpDropIndexes, next, gone.Spec))
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
