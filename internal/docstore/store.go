// Package docstore is Mayfly's write and read path for documents: it keeps
// the catalog of databases, collections and indexes in storage, writes every
// document together with all of its index entries in one atomic batch, and
// serves scans that hide documents whose TTL has passed.
package docstore

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// Options configure a Store. The zero value works with the real clock.
type Options struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Replicated says that the engine is a replica set member's: writes
	// reach storage only through the primary, so the store never writes
	// on its own at open (an unfinished index build stays until a primary
	// drops it; see DropUnfinishedBuilds).
	Replicated bool
	// Resident, when set, is the resident cache of the engine under the
	// store: the store gives it its rules (resident.go) and reports its
	// figures.
	Resident *rescache.Cache
}

// Store is the set of databases kept in one storage engine.
type Store struct {
	eng        storage.Engine
	clock      clock.Clock
	logger     *slog.Logger
	replicated bool
	resident   *rescache.Cache // nil: no resident cache

	// exactExpiry hides expired documents from every read and write before
	// the TTL monitor removes them; off means MongoDB's lagging behaviour.
	exactExpiry atomic.Bool

	mu     sync.RWMutex // guards dbs, nextID and dropping; held for catalog changes
	dbs    map[string]map[string]*Collection
	nextID uint64
	// dropping holds the IDs of collections a DropCollection has taken out
	// of dbs but not yet deleted from storage, so a reload leaves them be.
	dropping map[uint64]bool
	// byID maps collection IDs to collections without s.mu: a replica set
	// member applies expiries by collection ID while a catalog change may
	// hold s.mu waiting for that very apply. A dropped collection stays in
	// it until its drop is in storage, so entries before the drop apply
	// to it alike on every member.
	byID atomic.Pointer[map[uint64]*Collection]
	// applies counts a replica set member's applies in and out, odd
	// while one is under way (applies.go).
	applies atomic.Uint64

	// ownership says which documents the expiry machinery's changes
	// are silent for (ownership.go); nil: every document is owned.
	ownership atomic.Pointer[Ownership]
	// onIndexChange is called after TTL indexes may have changed.
	onIndexChange atomic.Pointer[func()]
	// onExpiry is told the expiry of each document written to a TTL
	// collection, so the monitor can wake earlier than it planned.
	onExpiry atomic.Pointer[func(time.Time)]
	// refreshes counts the writes of refreshOnRead (refresh.go).
	refreshes atomic.Int64
	// evictions counts the documents lruLimit indexes evicted (lru.go).
	evictions atomic.Int64
	// txns is the open transactions and what was written while they are
	// open (txntable.go).
	txns txnTable
	// intents is the keys open transactions wrote and have not committed
	// (txnintents.go).
	intents txnIntents
}

// Open loads the catalog from eng and finishes or rolls back any index
// build a crash interrupted.
func Open(eng storage.Engine, opt Options) (*Store, error) {
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	s := &Store{eng: eng, clock: opt.Clock, logger: opt.Logger, replicated: opt.Replicated, dbs: map[string]map[string]*Collection{}, nextID: 1, dropping: map[uint64]bool{}}
	s.exactExpiry.Store(true)
	if opt.Resident != nil {
		s.resident = opt.Resident
		s.resident.SetPolicy(s.residentPolicy())
	}
	if err := s.load(); err != nil {
		return nil, fmt.Errorf("docstore: open: %w", err)
	}
	eng.OnReopen(s.afterReopen)
	if tr, ok := eng.(storage.TouchRepairer); ok {
		if err := tr.RepairTouches(s.repairTouches); err != nil {
			return nil, fmt.Errorf("docstore: open: %w", err)
		}
	}
	return s, nil
}

// Sync makes every write committed so far durable (the fsync command; a
// j: true write that changed nothing).
func (s *Store) Sync() error {
	if err := s.eng.Sync(); err != nil {
		return fmt.Errorf("docstore: sync: %w", err)
	}
	return nil
}

// ResidentStats reports the resident cache's figures; ok is false when
// the store has none.
func (s *Store) ResidentStats() (st rescache.Stats, ok bool) {
	if s.resident == nil {
		return st, false
	}
	return s.resident.Stats(), true
}

// Engine returns the storage engine under the store.
func (s *Store) Engine() storage.Engine { return s.eng }

// Clock returns the store's clock.
func (s *Store) Clock() clock.Clock { return s.clock }

// SetExactExpiry turns read-time hiding of expired documents on or off.
func (s *Store) SetExactExpiry(on bool) { s.exactExpiry.Store(on) }

// ExactExpiry reports whether expired documents are hidden before deletion.
func (s *Store) ExactExpiry() bool { return s.exactExpiry.Load() }

// OnIndexChange registers f to run after any index is created, dropped or
// modified (the TTL monitor uses it to re-plan its next wake-up).
func (s *Store) OnIndexChange(f func()) { s.onIndexChange.Store(&f) }

// OnExpiry registers f to learn the expiry time of written documents.
func (s *Store) OnExpiry(f func(time.Time)) { s.onExpiry.Store(&f) }

func (s *Store) hintExpiry(t time.Time) {
	if f := s.onExpiry.Load(); f != nil {
		(*f)(t)
	}
}

func (s *Store) indexesChanged() {
	if f := s.onIndexChange.Load(); f != nil {
		(*f)()
	}
}

func (s *Store) load() error {
	nextID, metas, err := s.readCatalog()
	if err != nil {
		return err
	}
	s.nextID = max(s.nextID, nextID)
	for _, meta := range metas {
		if err := s.attach(meta); err != nil {
			return err
		}
	}
	s.publishIDsLocked()
	return nil
}

// readCatalog reads the next collection ID (0 if none is stored) and every
// collection's catalog entry from storage.
func (s *Store) readCatalog() (uint64, []*catalog.Collection, error) {
	var nextID uint64
	if v, err := s.eng.Get(nextIDKey()); err == nil && len(v) == 8 {
		nextID = binary.BigEndian.Uint64(v)
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, nil, err
	}
	it, err := s.eng.NewIter([]byte{tagCatalog}, []byte{tagCatalog + 1})
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	var metas []*catalog.Collection
	for ok := it.First(); ok; ok = it.Next() {
		meta, err := decodeMeta(it.Key(), it.Value())
		if err != nil {
			return 0, nil, err
		}
		metas = append(metas, meta)
	}
	return nextID, metas, it.Error()
}

func decodeMeta(key, raw []byte) (*catalog.Collection, error) {
	var meta catalog.Collection
	if err := bson.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("catalog entry %q: %w", key, err)
	}
	return &meta, nil
}

// attach registers a loaded collection.
func (s *Store) attach(meta *catalog.Collection) error {
	c := newCollection(s, meta)
	if err := c.settle(meta, true); err != nil {
		return err
	}
	s.db(meta.DB, true)[meta.Name] = c
	return nil
}

func (s *Store) db(name string, create bool) map[string]*Collection {
	d := s.dbs[name]
	if d == nil && create {
		d = map[string]*Collection{}
		s.dbs[name] = d
	}
	return d
}

// Collection returns the named collection, or nil.
func (s *Store) Collection(db, name string) *Collection {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dbs[db][name]
}

// CreateOptions are the create command's options that Mayfly honours.
type CreateOptions struct {
	Capped     bool
	CappedSize int64
	CappedMax  int64
	// Clustered is set by clusteredIndex; ClusteredTTL and ExpireAfter
	// by a clustered collection's expireAfterSeconds.
	Clustered    bool
	ClusteredTTL bool
	ExpireAfter  int64
	// Raw is the options document listCollections reports.
	Raw bson.D
	// Indexes are made with the collection, in its first catalog entry:
	// it is empty, so they are ready at once, and a crash cannot leave
	// the collection without them (a time-series collection's expiry).
	Indexes []*catalog.Index
}

// CreateCollection creates db.name; it fails with NamespaceExists (48) if
// the collection is already there.
func (s *Store) CreateCollection(db, name string, opt CreateOptions) (*Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.dbs[db][name]; ok {
		return nil, mongoerr.Newf(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	}
	return s.createLocked(db, name, opt)
}

// GetOrCreate returns db.name, creating it implicitly as inserts do.
func (s *Store) GetOrCreate(db, name string) (*Collection, bool, error) {
	if c := s.Collection(db, name); c != nil {
		return c, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.dbs[db][name]; ok {
		return c, false, nil
	}
	c, err := s.createLocked(db, name, CreateOptions{})
	return c, err == nil, err
}

func (s *Store) createLocked(db, name string, opt CreateOptions) (*Collection, error) {
	if err := nsname.ValidateNamespace(db, name); err != nil {
		return nil, err
	}
	if err := s.checkDBCaseLocked(db); err != nil {
		return nil, err
	}
	meta := newMeta(db, name, s.nextID, opt)
	b := s.eng.NewBatch()
	defer b.Close()
	if err := putMeta(b, meta); err != nil {
		return nil, err
	}
	if err := b.Set(nextIDKey(), binary.BigEndian.AppendUint64(nil, s.nextID+1)); err != nil {
		return nil, err
	}
	addCatalogEvent(b, changestream.CreateEvent(meta))
	if err := b.Commit(true); err != nil {
		return nil, fmt.Errorf("docstore: create %s.%s: %w", db, name, err)
	}
	s.nextID++
	c := newCollection(s, meta)
	s.db(db, true)[name] = c
	s.publishIDsLocked()
	return c, nil
}

// newMeta is the first catalog entry of a collection created with opt.
func newMeta(db, name string, id uint64, opt CreateOptions) *catalog.Collection {
	meta := &catalog.Collection{
		DB: db, Name: name, ID: id, UUID: newUUID(), Options: opt.Raw,
		Capped: opt.Capped, CappedSize: opt.CappedSize, CappedMax: opt.CappedMax,
		Indexes: []catalog.Index{catalog.IDIndex()}, NextIndexID: 1,
		Clustered: opt.Clustered, ClusteredTTL: opt.ClusteredTTL, ClusteredExpireAfter: opt.ExpireAfter,
	}
	for _, ix := range opt.Indexes {
		def := *ix
		def.ID, def.Ready = meta.NextIndexID, true
		meta.NextIndexID++
		meta.Indexes = append(meta.Indexes, def)
	}
	if meta.Options == nil {
		meta.Options = bson.D{}
	}
	return meta
}

func putMeta(b storage.Batch, meta *catalog.Collection) error {
	raw, err := bson.Marshal(meta)
	if err != nil {
		return fmt.Errorf("docstore: encode catalog entry: %w", err)
	}
	return b.Set(catalogKey(meta.DB, meta.Name), raw)
}

func newUUID() bson.Binary {
	u := make([]byte, 16)
	_, _ = rand.Read(u)
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u}
}

// DropCollection removes db.name with all its documents and indexes. It
// reports false if there was no such collection.
func (s *Store) DropCollection(db, name string) (bool, error) {
	s.mu.Lock()
	c, ok := s.dbs[db][name]
	if ok {
		delete(s.dbs[db], name)
		if len(s.dbs[db]) == 0 {
			delete(s.dbs, db)
		}
		s.dropping[c.meta().ID] = true
	}
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	defer s.dropDone(c.meta().ID)
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	c.dropped.Store(true)
	defer s.indexesChanged()
	return true, c.deleteAllLocked(true)
}

// DropDatabase drops every collection of db. Change streams see each
// collection's drop, then the database's, as mongod's oplog gives them;
// here all of it is one batch, so a crash leaves every drop with its
// event and the database's event, or nothing dropped.
func (s *Store) DropDatabase(db string) error {
	colls := s.takeOutDB(db)
	if len(colls) == 0 {
		return nil
	}
	for _, c := range colls {
		defer s.dropDone(c.meta().ID)
	}
	for _, c := range colls {
		c.schemaMu.Lock()
		defer c.schemaMu.Unlock()
		c.dropped.Store(true)
	}
	defer s.indexesChanged()
	b := s.eng.NewBatch()
	defer b.Close()
	for _, c := range colls {
		meta := c.meta()
		if err := dropWrites(b, meta, true); err != nil {
			return err
		}
		addCatalogEvent(b, changestream.DropEvent(meta))
	}
	addCatalogEvent(b, &changestream.Event{Op: changestream.OpDropDatabase, DB: db})
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("docstore: drop database %s: %w", db, err)
	}
	for _, c := range colls {
		c.emptied()
	}
	return nil
}

// takeOutDB removes db's collections from the catalog in memory, marked
// as being dropped, and returns them in name order.
func (s *Store) takeOutDB(db string) []*Collection {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.dbs[db]))
	for n := range s.dbs[db] {
		names = append(names, n)
	}
	sort.Strings(names)
	colls := make([]*Collection, len(names))
	for i, n := range names {
		colls[i] = s.dbs[db][n]
		s.dropping[colls[i].meta().ID] = true
	}
	delete(s.dbs, db)
	return colls
}

// RenameCollection moves a collection to a new name, keeping its data.
// With dropTarget, a collection under the new name is dropped in the same
// batch, without an event of its own: as on mongod, whose one rename
// oplog entry carries the dropped collection's UUID (dropTarget), streams
// see only the rename. Across databases the collection gets a new UUID
// and the events are those of mongod's copy (renamedb.go).
func (s *Store) RenameCollection(fromDB, from, toDB, to string, dropTarget bool) error {
	if err := nsname.ValidateNamespace(toDB, to); err != nil {
		return err
	}
	if fromDB == toDB && from == to {
		// Before: dropTarget dropped the collection, then found no source.
		return mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	replaced, err := s.renameLocked(fromDB, from, toDB, to, dropTarget)
	if replaced {
		s.indexesChanged()
	}
	return err
}

// renameLocked renames under s.mu; replaced reports a dropped target.
func (s *Store) renameLocked(fromDB, from, toDB, to string, dropTarget bool) (replaced bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, target, err := s.renameEndsLocked(fromDB, from, toDB, to, dropTarget)
	if err != nil {
		return false, err
	}
	if err := s.checkDBCaseLocked(toDB); err != nil { // the target database may be new
		return false, err
	}
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	if err := c.refuseWhileBuilding(); err != nil {
		return false, err
	}
	meta := c.meta().Clone()
	meta.DB, meta.Name = toDB, to
	b := s.eng.NewBatch()
	defer b.Close()
	var dropped []byte // the replaced collection's UUID, for the rename's event
	if target != nil {
		target.schemaMu.Lock()
		defer target.schemaMu.Unlock()
		dropped = target.meta().UUID.Data
		// Its catalog entry is overwritten by the renamed one's.
		if err := dropWrites(b, target.meta(), false); err != nil {
			return false, err
		}
	}
	if err := b.Delete(catalogKey(fromDB, from)); err != nil {
		return false, err
	}
	if fromDB == toDB {
		addCatalogEvent(b, changestream.RenameEvent(meta, fromDB, from, dropped))
	} else if err := s.renameAcrossLocked(b, c, meta, dropped); err != nil {
		return false, err
	}
	if err := putMeta(b, meta); err != nil {
		return false, err
	}
	if err := b.Commit(true); err != nil {
		return false, fmt.Errorf("docstore: rename: %w", err)
	}
	if target != nil {
		target.dropped.Store(true)
		target.emptied()
	}
	delete(s.dbs[fromDB], from)
	if len(s.dbs[fromDB]) == 0 {
		delete(s.dbs, fromDB)
	}
	c.setMeta(meta)
	s.db(toDB, true)[to] = c
	s.publishIDsLocked()
	return target != nil, nil
}

// renameEndsLocked finds a rename's source and target (nil: none) and
// refuses them in mongod's order (rename_collection.cpp): no source, a
// view as the source (whatever the target), a view as the target (even
// with dropTarget), a collection as the target without dropTarget.
func (s *Store) renameEndsLocked(fromDB, from, toDB, to string, dropTarget bool) (c, target *Collection, err error) {
	c, ok := s.dbs[fromDB][from]
	if !ok {
		return nil, nil, mongoerr.New(mongoerr.NamespaceNotFound, "source namespace does not exist")
	}
	if changestream.NsTypeOf(c.meta()) == changestream.NsView {
		return nil, nil, mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "cannot rename view: %s.%s", fromDB, from)
	}
	target = s.dbs[toDB][to]
	switch {
	case target == nil:
	case changestream.NsTypeOf(target.meta()) == changestream.NsView:
		return nil, nil, mongoerr.Newf(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	case !dropTarget:
		return nil, nil, mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
	}
	return c, target, nil
}

// DatabaseNames lists databases that hold at least one collection, sorted.
func (s *Store) DatabaseNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.dbs))
	for n := range s.dbs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CollectionNames lists the collections of db, sorted.
func (s *Store) CollectionNames(db string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.dbs[db]))
	for n := range s.dbs[db] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Collections returns every collection of every database.
func (s *Store) Collections() []*Collection {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Collection
	for _, d := range s.dbs {
		for _, c := range d {
			out = append(out, c)
		}
	}
	return out
}
