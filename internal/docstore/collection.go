package docstore

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/expiryflight"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlmark"
	"github.com/mayflydb/mayfly/internal/validator"
)

// Collection is an open collection. Writes take the locks locks.go
// describes; reads take none.
type Collection struct {
	store    *Store
	schemaMu sync.RWMutex
	stripes  [lockStripes]sync.Mutex
	uniqueMu sync.Mutex
	seed     maphash.Seed
	state    atomic.Pointer[collState]
	dropped  atomic.Bool

	count    atomic.Int64 // live documents
	dataSize atomic.Int64 // bytes of BSON

	// inFlight is the documents in expiry batches not yet applied
	// (inflight.go).
	inFlight expiryflight.Set

	// multikeyMu orders writers that record new multikey paths.
	multikeyMu sync.Mutex

	builds builds // index builds under way (indexbuild.go)
}

// collState is an immutable view of the collection's definition; it is
// swapped whole when an index is added, dropped or modified.
type collState struct {
	meta    *catalog.Collection
	indexes []*indexState
	ttl     []*indexState // ready TTL indexes, for expiry checks
	refresh []*indexState // those of ttl with refreshOnRead
	lru     []*indexState // ready indexes with an lruLimit
	// elements are those of ttl with expireElements: they expire array
	// elements, never documents (elements.go).
	elements []*indexState
	// clustered is the TTL state of a clustered collection's
	// expireAfterSeconds (clustered.go), also in ttl; nil without one.
	clustered *indexState
	// validator is the collection's schema validator compiled from this
	// catalog version's options, nil for none (rules.go).
	validator *validator.Validator
}

type indexState struct {
	def     *catalog.Index
	prefix  []byte
	partial *query.Filter
	// progress is set for ready TTL indexes.
	progress *ttlmark.Progress
	// simple is true for an index without a partial filter whose fields
	// are all top-level: its keys can be read from raw BSON (rawKeys).
	simple bool
	desc   []bool // per field
	// hashed: the index has a hashed field (hashed.go).
	hashed bool
	// clustered marks the TTL state of a clustered collection: its
	// entries are the documents (clustered.go).
	clustered bool
	// warnedTo is, for a ready TTL index, the expiry (Unix ms) up to which
	// its documents have been warned of (0: not started; see warn.go).
	// A pointer, shared like progress by the copies publishMeta makes.
	warnedTo *atomic.Int64
	// warnedStored is the warnedTo last stored (warn.go); shared the same way.
	warnedStored *atomic.Int64
	// warnMu orders a warning pass and the writes that warn of their own
	// documents (warn.go); shared the same way.
	warnMu *sync.Mutex
	// appends: a touch appends its entry here (ttlloose.go).
	appends bool
	// lruMark is set for indexes with an lruLimit (lru.go).
	lruMark *lruMark
	// collator keys the index's strings when it stores collation keys
	// (catalog.Index.CollatedKeys); nil otherwise.
	collator *collation.Collation
}

func newCollection(s *Store, meta *catalog.Collection) *Collection {
	c := &Collection{store: s, seed: maphash.MakeSeed()}
	c.setMeta(meta)
	return c
}

func (c *Collection) setMeta(meta *catalog.Collection) {
	st := &collState{meta: meta, validator: validator.Compile(meta.Options)}
	for i := range meta.Indexes {
		def := &meta.Indexes[i]
		ix := &indexState{def: def, prefix: indexPrefix(meta.ID, def.ID), simple: def.Partial == nil}
		for _, f := range def.Fields {
			ix.desc = append(ix.desc, f.Desc)
			ix.simple = ix.simple && !strings.Contains(f.Path, ".")
		}
		if def.Partial != nil {
			// Validated at creation; a stored filter always compiles.
			ix.partial, _ = query.NewFilter(def.Partial)
		}
		if def.IsHashed() {
			ix.hashed, ix.simple = true, false // rawKeys does not hash
		}
		if def.CollatedKeys {
			// Validated at creation too.
			ix.collator, _ = collation.Parse(def.Collation)
			ix.simple = false // rawKeys does not key strings
		}
		ix.appends = appendsEntries(ix)
		st.indexes = append(st.indexes, ix)
		if def.HasLRU() && def.Ready {
			ix.lruMark = &lruMark{}
			st.lru = append(st.lru, ix)
		}
		if def.TTL && def.Ready && len(def.Fields) == 1 {
			ix.progress = ttlmark.New(maxBatchesInFlight)
			ix.warnedTo, ix.warnedStored, ix.warnMu = new(atomic.Int64), new(atomic.Int64), new(sync.Mutex)
			st.ttl = append(st.ttl, ix)
			if def.RefreshOnRead {
				st.refresh = append(st.refresh, ix)
			}
			if def.ExpireElements {
				st.elements = append(st.elements, ix)
			}
		}
	}
	st.addClustered(newClusteredTTL(meta))
	c.state.Store(st)
}

func (c *Collection) meta() *catalog.Collection { return c.state.Load().meta }

// Meta returns the collection's current definition (do not modify).
func (c *Collection) Meta() *catalog.Collection { return c.meta() }

// Namespace returns "db.name".
func (c *Collection) Namespace() string { return c.meta().Namespace() }

// Count returns the number of stored documents (expired ones included
// until they are deleted).
func (c *Collection) Count() int64 { return c.count.Load() }

// DataSize returns the total BSON size of stored documents.
func (c *Collection) DataSize() int64 { return c.dataSize.Load() }

// Indexes returns the index definitions, _id first.
func (c *Collection) Indexes() []catalog.Index { return c.meta().Indexes }

// HasTTL reports whether the collection has a TTL index.
func (c *Collection) HasTTL() bool { return len(c.state.Load().ttl) > 0 }

// settle makes the collection match its catalog entry meta as read from
// storage, at open, after a storage reopen and after a replicated catalog
// change: it drops index builds that did not finish (a build under way,
// after the storage reopened, then finds its indexes gone and fails) and,
// if recount is set, recounts the documents.
func (c *Collection) settle(meta *catalog.Collection, recount bool) error {
	c.setMeta(meta)
	for _, ix := range meta.Indexes {
		if !ix.Ready && !c.store.replicated {
			c.store.logger.Warn("dropping index whose build did not finish", "ns", meta.Namespace(), "index", ix.Name)
			if err := c.dropIndexLocked(ix.Name, false); err != nil {
				return err
			}
		}
	}
	if !recount {
		return nil
	}
	return c.recount()
}

// recount walks the documents to restore the counters.
func (c *Collection) recount() error {
	prefix := docPrefix(c.meta().ID)
	it, err := c.store.eng.NewIter(prefix, prefixEnd(prefix))
	if err != nil {
		return fmt.Errorf("docstore: recount: %w", err)
	}
	defer it.Close()
	var n, size int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
		size += int64(len(it.Value()))
	}
	c.count.Store(n)
	c.dataSize.Store(size)
	return it.Error()
}

// deleteAllLocked removes every document and index entry, and the catalog
// entry too (with the drop's event) when dropMeta is set.
func (c *Collection) deleteAllLocked(dropMeta bool) error {
	meta := c.meta()
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := dropWrites(b, meta, dropMeta); err != nil {
		return err
	}
	if dropMeta {
		addCatalogEvent(b, changestream.DropEvent(meta))
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: drop %s: %w", meta.Namespace(), err)
	}
	c.emptied()
	return nil
}

// dropWrites adds to b the deletion of meta's documents and index entries
// and, with dropMeta, of its catalog entry.
func dropWrites(b storage.Batch, meta *catalog.Collection, dropMeta bool) error {
	dp, ip := docPrefix(meta.ID), collIndexPrefix(meta.ID)
	if err := b.DeleteRange(dp, prefixEnd(dp)); err != nil {
		return err
	}
	if err := b.DeleteRange(ip, prefixEnd(ip)); err != nil {
		return err
	}
	wp := collWarnedPrefix(meta.ID)
	if err := b.DeleteRange(wp, prefixEnd(wp)); err != nil {
		return err
	}
	if dropMeta {
		return b.Delete(catalogKey(meta.DB, meta.Name))
	}
	return nil
}

// emptied resets the counters once the collection's documents are
// deleted.
func (c *Collection) emptied() {
	c.count.Store(0)
	c.dataSize.Store(0)
}

// lookupID returns the _id of doc.
func lookupID(doc bson.D) (any, bool) {
	for _, e := range doc {
		if e.Key == "_id" {
			return e.Value, true
		}
	}
	return nil, false
}
