package docstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

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
// the error then wraps ctx's. A request for an index another build is
// making waits for that build, then looks again.
func (c *Collection) CreateIndexesContext(ctx context.Context, ixs []*catalog.Index) (CreateIndexesResult, error) {
	return c.CreateIndexesWatched(ctx, ixs, BuildWatch{})
}

// BuildWatch follows an index build from outside the store: the server
// shows it in currentOp and holds it at its fail point.
type BuildWatch struct {
	// Started, when set, is called once the build's indexes are recorded
	// not ready, before it reads the documents.
	Started func(IndexBuild)
	// AfterBatch, when set, is called after each batch of the build, its
	// locks released.
	AfterBatch func()
}

// CreateIndexesWatched is CreateIndexesContext whose build, if it starts
// one, w follows.
func (c *Collection) CreateIndexesWatched(ctx context.Context, ixs []*catalog.Index, w BuildWatch) (CreateIndexesResult, error) {
	for {
		run, busy, res, err := c.startBuild(ixs)
		if busy != nil {
			select {
			case <-busy.done:
				continue
			case <-ctx.Done():
				return res, fmt.Errorf("docstore: wait for index build: %w", ctx.Err())
			}
		}
		if run == nil {
			return res, err
		}
		run.onBatch = w.AfterBatch
		if w.Started != nil {
			w.Started(IndexBuild{run})
		}
		out, err := run.run(ctx)
		out.Before = res.Before
		return out, err
	}
}

// startBuild starts the build of the requested indexes not already
// there, or returns the build under way of one of them.
func (c *Collection) startBuild(ixs []*catalog.Index) (run, busy *buildRun, res CreateIndexesResult, err error) {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	res.Before = readyIndexes(c.meta())
	news, busy, err := c.newIndexesLocked(ixs)
	if busy != nil || err != nil || len(news) == 0 {
		res.After, res.AllExisted = res.Before, err == nil && busy == nil
		return nil, busy, res, err
	}
	run, err = c.newBuildLocked(news)
	return run, nil, res, err
}

// newIndexesLocked checks every requested index against the collection's
// and the ones before it in the request, before anything is built, as
// mongod does, and returns those not already there, or the build under
// way of one that is being built.
func (c *Collection) newIndexesLocked(ixs []*catalog.Index) ([]*catalog.Index, *buildRun, error) {
	meta := c.meta()
	have := append([]catalog.Index(nil), meta.Indexes...)
	var news []*catalog.Index
	for _, ix := range ixs {
		exists, err := catalog.CheckNew(have, ix)
		if err != nil {
			return nil, nil, err
		}
		if exists {
			if def := meta.Index(ix.Name); def != nil && !def.Ready {
				if run := c.builds.of(def.ID); run != nil {
					return nil, run, nil
				}
			}
			continue
		}
		if len(have) >= catalog.MaxIndexes {
			return nil, nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "add index fails, too many indexes for %s key:%s", meta.Namespace(), bsonutil.Format(ix.KeyPattern()))
		}
		if ix.Partial != nil {
			if _, err := query.NewFilter(ix.Partial); err != nil {
				return nil, nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: %s", bsonutil.Format(ix.Spec), mongoerr.As(err).Msg)
			}
		}
		have = append(have, *ix)
		news = append(news, ix)
	}
	return news, nil, nil
}

// startBuildLocked records the new indexes as not ready, in one write, and
// returns the position of the first of them in the catalog entry.
func (c *Collection) startBuildLocked(news []*catalog.Index, build bson.Binary) (int, error) {
	next := c.meta().Clone()
	first := len(next.Indexes)
	for _, ix := range news {
		def := *ix
		def.ID, def.Ready, def.BuildUUID = next.NextIndexID, false, build.Data
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
		def := next.Index(ix.Name)
		def.Ready, def.BuildUUID = true, nil
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

// abortBuildLocked drops the indexes of a failed build (by catalog ID),
// their entries and catalog records, in one write and with no event: none
// announced them.
func (c *Collection) abortBuildLocked(ids []uint32) error {
	meta := c.meta()
	next := meta.Clone()
	next.Indexes = next.Indexes[:0]
	b := c.store.eng.NewBatch()
	defer b.Close()
	for i := range meta.Indexes {
		ix := &meta.Indexes[i]
		if ix.Ready || !slices.Contains(ids, ix.ID) {
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

// buildFailed gives an error of the build's scan (a duplicate key, a
// document the index cannot hold) the context mongod's createIndexes
// adds to a failed build: a build UUID and the collection's.
func buildFailed(meta *catalog.Collection, build bson.Binary, err error) error {
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		return err
	}
	return &mongoerr.Error{
		Code:  me.Code,
		Msg:   fmt.Sprintf("Index build failed: %s: Collection %s ( %s ) :: caused by :: %s", bsonutil.FormatUUID(build.Data), meta.Namespace(), bsonutil.FormatUUID(meta.UUID.Data), me.Msg),
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

// DropIndex removes the named index and its entries.
func (c *Collection) DropIndex(name string) error { return c.DropIndexes([]string{name}) }

// DropIndexes removes the named indexes and their entries, as dropIndexes
// does: an index being built goes only with every index of its build,
// which stops (mongod aborts a build whole). Naming part of a build fails
// before anything is dropped.
func (c *Collection) DropIndexes(names []string) error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	if err := c.checkDropsLocked(names); err != nil {
		return err
	}
	for _, name := range names {
		if err := c.dropIndexLocked(name, true); err != nil {
			return err
		}
	}
	c.store.indexesChanged()
	return nil
}

// checkDropsLocked refuses a drop of part of a build under way.
func (c *Collection) checkDropsLocked(names []string) error {
	meta := c.meta()
	named := map[uint32]bool{}
	for _, name := range names {
		if ix := meta.Index(name); ix != nil {
			named[ix.ID] = true
		}
	}
	for _, name := range names {
		ix := meta.Index(name)
		if ix == nil {
			return mongoerr.Newf(mongoerr.IndexNotFound, "index not found with name [%s]", name)
		}
		r := c.builds.of(ix.ID)
		if r == nil || ix.Ready {
			continue // ready, or a dead primary's build, dropped whole
		}
		for _, id := range r.ids {
			if !named[id] {
				return mongoerr.Newf(mongoerr.IndexNotFound, "can't drop unfinished index with name: %s", name)
			}
		}
	}
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
	if report && gone.Ready {
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
