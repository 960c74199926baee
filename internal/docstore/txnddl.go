package docstore

import (
	"encoding/binary"
	"errors"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Collections and indexes created inside a transaction (docs/design/0015),
// as mongod 4.4+ allows. A collection the transaction creates is its own
// until the commit: a Collection that the store does not list, whose
// catalog entry and create event wait in the transaction, so that others
// see neither it nor its documents. Its ID is taken from the store's
// counter at once (an abort wastes it); the commit writes its catalog
// entry with the transaction's writes in one batch and lists it, or fails
// with WriteConflict when someone else created the namespace meanwhile.

// txnCreated is a collection created by a transaction, with the change
// events its creation and its index builds announce at the commit.
type txnCreated struct {
	c      *Collection
	events []*changestream.Event
}

// Collection is db.name as the transaction sees it: one it created, or
// the store's.
func (x *Txn) Collection(db, name string) *Collection {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := x.createdNamed(db, name); p != nil {
		return p.c
	}
	return x.s.Collection(db, name)
}

// GetOrCreate is Store.GetOrCreate inside the transaction: a missing
// collection is created by the transaction.
func (x *Txn) GetOrCreate(db, name string) (*Collection, bool, error) {
	if c := x.Collection(db, name); c != nil {
		return c, false, nil
	}
	c, err := x.create(db, name, CreateOptions{}, false)
	return c, err == nil, err
}

// CreateCollection is Store.CreateCollection inside the transaction. A
// collection in the transaction's snapshot, or one it created, exists;
// one created by others since the snapshot is not seen, as on mongod, and
// fails the commit instead.
func (x *Txn) CreateCollection(db, name string, opt CreateOptions) (*Collection, error) {
	return x.create(db, name, opt, true)
}

func (x *Txn) create(db, name string, opt CreateOptions, explicit bool) (*Collection, error) {
	if err := nsname.ValidateNamespace(db, name); err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return nil, ErrTxnDone
	}
	if explicit {
		if err := x.refuseExisting(db, name); err != nil {
			return nil, err
		}
	}
	meta, err := x.s.reserveMeta(db, name, opt)
	if err != nil {
		return nil, err
	}
	p := &txnCreated{c: newCollection(x.s, meta), events: []*changestream.Event{changestream.CreateEvent(meta)}}
	x.created = append(x.created, p)
	return p.c, nil
}

// refuseExisting fails with NamespaceExists when db.name is one the
// transaction created or one its snapshot holds.
func (x *Txn) refuseExisting(db, name string) error {
	exists := x.createdNamed(db, name) != nil
	if !exists {
		_, err := txnSnapshot{x}.Get(catalogKey(db, name))
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		exists = err == nil
	}
	if exists {
		return mongoerr.Newf(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	}
	return nil
}

// reserveMeta is the catalog entry of a collection a transaction
// creates, with an ID no other collection will take.
func (s *Store) reserveMeta(db, name string, opt CreateOptions) (*catalog.Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkDBCaseLocked(db); err != nil {
		return nil, err
	}
	meta := newMeta(db, name, s.nextID, opt)
	s.nextID++
	return meta, nil
}

func (x *Txn) createdNamed(db, name string) *txnCreated {
	for _, p := range x.created {
		if m := p.c.meta(); m.DB == db && m.Name == name {
			return p
		}
	}
	return nil
}

func (x *Txn) createdColl(c *Collection) *txnCreated {
	for _, p := range x.created {
		if p.c == c {
			return p
		}
	}
	return nil
}

// CreateIndexes is createIndexes inside the transaction, by mongod's
// rules: indexes that all exist already are fine on any collection; new
// ones only on a collection the transaction created and left empty, where
// they are ready at once and announced at the commit.
func (x *Txn) CreateIndexes(c *Collection, ixs []*catalog.Index) (CreateIndexesResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return CreateIndexesResult{}, ErrTxnDone
	}
	p := x.createdColl(c)
	if p == nil {
		return existingIndexes(c, ixs)
	}
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	res := CreateIndexesResult{Before: len(c.meta().Indexes)}
	news, _, err := c.newIndexesLocked(ixs) // the collection is the transaction's: nothing builds there
	if err != nil || len(news) == 0 {
		res.After, res.AllExisted = res.Before, err == nil
		return res, err
	}
	if err := x.refuseNonEmpty(c); err != nil {
		return res, err
	}
	x.addIndexes(p, news)
	res.After = len(c.meta().Indexes)
	return res, nil
}

// existingIndexes answers createIndexes on a collection the transaction
// did not create: fine when every index is there already, refused
// otherwise, since a build would need the collection to itself.
func existingIndexes(c *Collection, ixs []*catalog.Index) (CreateIndexesResult, error) {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	res := CreateIndexesResult{Before: readyIndexes(c.meta())}
	news, busy, err := c.newIndexesLocked(ixs)
	if err != nil {
		return res, err
	}
	if len(news) > 0 || busy != nil {
		return res, mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot create new indexes on existing collection %s in a multi-document transaction.", c.Namespace())
	}
	res.After, res.AllExisted = res.Before, true
	return res, nil
}

// refuseNonEmpty refuses new indexes on a created collection holding
// documents the transaction wrote: they would need a build.
func (x *Txn) refuseNonEmpty(c *Collection) error {
	p := docPrefix(c.meta().ID)
	it, err := x.view().NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	if it.First() {
		return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot create new indexes on non-empty collection %s in a multi-document transaction.", c.Namespace())
	}
	return it.Error()
}

// addIndexes makes news ready on the created collection, each with its
// own createIndexes event, as an empty collection's are.
func (x *Txn) addIndexes(p *txnCreated, news []*catalog.Index) {
	next := p.c.meta().Clone()
	for _, ix := range news {
		def := *ix
		def.ID, def.Ready = next.NextIndexID, true
		next.NextIndexID++
		next.Indexes = append(next.Indexes, def)
		p.events = append(p.events, changestream.IndexesEvent(changestream.OpCreateIndexes, next, ix.Spec))
	}
	p.c.setMeta(next)
	if tc := x.colls[p.c]; tc != nil {
		tc.st = p.c.state.Load() // its writes so far (none live) met the old index set
	}
}

// lockCatalog takes the store's catalog lock for a commit that lists
// created collections; a commit without any takes none.
func (x *Txn) lockCatalog() (unlock func()) {
	if len(x.created) == 0 {
		return func() {}
	}
	x.s.mu.Lock()
	return x.s.mu.Unlock
}

// validateCreated refuses the commit when a namespace the transaction
// created was created by someone else since; s.mu is held.
func (x *Txn) validateCreated() error {
	for _, p := range x.created {
		m := p.c.meta()
		if _, taken := x.s.dbs[m.DB][m.Name]; taken {
			return mongoerr.New(mongoerr.WriteConflict, WriteConflictMessage)
		}
		if err := x.s.checkDBCaseLocked(m.DB); err != nil {
			return err
		}
	}
	return nil
}

// stageCreated adds the created collections' catalog entries and events
// to the commit's batch, and the ID counter as it stands; s.mu is held.
func (x *Txn) stageCreated(b storage.Batch) error {
	if len(x.created) == 0 {
		return nil
	}
	for _, p := range x.created {
		if err := putMeta(b, p.c.meta()); err != nil {
			return err
		}
		for _, ev := range p.events {
			addCatalogEvent(b, ev)
		}
	}
	return b.Set(nextIDKey(), binary.BigEndian.AppendUint64(nil, x.s.nextID))
}

// listCreated lists the created collections once their entries are in
// storage; s.mu is held.
func (x *Txn) listCreated() {
	if len(x.created) == 0 {
		return
	}
	for _, p := range x.created {
		m := p.c.meta()
		x.s.db(m.DB, true)[m.Name] = p.c
	}
	x.s.publishIDsLocked()
}
