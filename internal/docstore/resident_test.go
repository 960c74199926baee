package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// residentWrite is one kind of docstore write, run on the collection
// db.c of residentFixture (documents a, b, c with tokens ta, tb, tc and
// dates at, a token_1 unique index and a t_1 TTL index of 60 s).
type residentWrite func(t *testing.T, s *Store, c *Collection, clk *clock.Manual)

// residentWrites has a row for every operation a change event can
// describe (compared with changestream's list in the test) and for the
// writes no event names.
var residentWrites = map[string]residentWrite{
	"insert": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		insert(t, c, bson.D{{Key: "_id", Value: "n"}, {Key: "token", Value: "tn"}, {Key: "t", Value: bson.NewDateTimeFromTime(t0)}})
	},
	"update": func(t *testing.T, _ *Store, c *Collection, clk *clock.Manual) {
		modify(t, c, "a", func(doc bson.D) Change {
			return Change{Kind: Replace, Doc: bsonutil.WithField(doc, "t", bson.NewDateTimeFromTime(clk.Now()))}
		})
	},
	"touch": func(t *testing.T, _ *Store, c *Collection, clk *clock.Manual) {
		for range 3 { // the first turns a record entry loose; the next read it back
			clk.Advance(time.Second)
			modify(t, c, "a", func(doc bson.D) Change {
				return Change{Kind: Replace, Doc: bsonutil.WithField(doc, "t", bson.NewDateTimeFromTime(clk.Now()))}
			})
		}
	},
	"replace": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		modify(t, c, "b", func(bson.D) Change {
			return Change{Kind: Replace, Whole: true, Doc: bson.D{{Key: "_id", Value: "b"}, {Key: "token", Value: "tn"}}}
		})
	},
	"delete": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		modify(t, c, "c", func(bson.D) Change { return Change{Kind: Remove} })
	},
	"drop": func(t *testing.T, s *Store, _ *Collection, _ *clock.Manual) {
		if _, err := s.DropCollection("db", "c"); err != nil {
			t.Fatal(err)
		}
	},
	"rename": func(t *testing.T, s *Store, _ *Collection, _ *clock.Manual) {
		if err := s.RenameCollection("db", "c", "db", "d", false); err != nil {
			t.Fatal(err)
		}
	},
	"dropDatabase": func(t *testing.T, s *Store, _ *Collection, _ *clock.Manual) {
		if err := s.DropDatabase("db"); err != nil {
			t.Fatal(err)
		}
	},
	"expiring": func(t *testing.T, s *Store, c *Collection, clk *clock.Manual) {
		// A warning writes no document; its collMod and the expiry it
		// warns of are rows of their own.
		if err := c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.WarnBefore = 30; return nil }); err != nil {
			t.Fatal(err)
		}
	},
	"create": func(t *testing.T, s *Store, _ *Collection, _ *clock.Manual) {
		if _, err := s.CreateCollection("db", "other", CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	},
	"createIndexes": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: -1}}}, {Key: "name", Value: "token_-1"}})
	},
	"dropIndexes": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		if err := c.DropIndex("token_1"); err != nil {
			t.Fatal(err)
		}
	},
	"modify": func(t *testing.T, _ *Store, c *Collection, _ *clock.Manual) {
		if err := c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.ExpireAfter = 10; return nil }); err != nil {
			t.Fatal(err)
		}
	},
	// Writes that no event of their own names.
	"ttl delete": func(t *testing.T, _ *Store, c *Collection, clk *clock.Manual) {
		clk.Advance(2 * time.Minute)
		if n := runPass(t, c, clk.Now()); n != 3 {
			t.Fatalf("the pass deleted %d documents, want 3", n)
		}
	},
	"transaction": func(t *testing.T, s *Store, c *Collection, _ *clock.Manual) {
		x := s.BeginTxn()
		if _, err := x.Modify(c, "a", func(bson.D) (Change, error) { return Change{Kind: Remove}, nil }); err != nil {
			t.Fatal(err)
		}
		if err := x.Insert(c, bson.D{{Key: "_id", Value: "n"}, {Key: "token", Value: "ta"}}); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	},
}

func TestEveryWriteKindKeepsTheResidentCacheExact(t *testing.T) {
	for op := changestream.OpInsert; op.String() != "unknown"; op++ {
		if _, ok := residentWrites[op.String()]; !ok {
			t.Errorf("change event %q has no row in residentWrites", op)
		}
	}
	for name, write := range residentWrites {
		t.Run(name, func(t *testing.T) {
			f := newResidentFixture(t)
			f.fill(t)
			write(t, f.primary, f.primary.Collection("db", "c"), f.clk)
			f.ship(t)
			f.check(t, "primary", f.primary)
			f.check(t, "secondary", f.secondary)
		})
	}
}

// residentFixture is a primary store and a secondary that applies the
// primary's batches as a replica set member does (their encoded writes
// appended to a batch of its own engine), each with a resident cache.
type residentFixture struct {
	clk                *clock.Manual
	primary, secondary *Store
	shipped            *[][]byte
	docKeys, ranges    [][]byte
	// ttl is the TTL index's prefix; entries, every key of it seen in
	// storage, each read by key too (the cache holds each document's
	// newest one, for the next touch).
	ttl     []byte
	entries map[string]bool
}

func newResidentFixture(t *testing.T) *residentFixture {
	clk := clock.NewManual(t0)
	f := &residentFixture{clk: clk, shipped: &[][]byte{}, entries: map[string]bool{}}
	pEng := openCachedEngine(t, clk)
	var err error
	if f.primary, err = Open(shippingEngine{Engine: pEng, out: f.shipped}, Options{Clock: clk, Resident: pEng.cache}); err != nil {
		t.Fatal(err)
	}
	c, err := f.primary.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}, {Key: "unique", Value: true}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 60}})
	for _, id := range []string{"a", "b", "c"} {
		insert(t, c, bson.D{{Key: "_id", Value: id}, {Key: "token", Value: "t" + id}, {Key: "t", Value: bson.NewDateTimeFromTime(t0)}})
	}
	sEng := openCachedEngine(t, clk)
	f.secondary, err = Open(sEng, Options{Clock: clk, Resident: sEng.cache, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	f.ship(t)
	token := indexByName(t, c, "token_1")
	f.ttl = indexByName(t, c, "t_1").prefix
	for _, id := range []string{"a", "b", "c", "n"} {
		f.docKeys = append(f.docKeys, docKey(c.meta().ID, keyenc.AppendValue(nil, id)))
		f.ranges = append(f.ranges, keyenc.AppendValue(append([]byte(nil), token.prefix...), "t"+id))
	}
	return f
}

// ship applies what the primary committed since the last call to the
// secondary, and reloads its catalog as a member does.
func (f *residentFixture) ship(t *testing.T) {
	t.Helper()
	eng := f.secondary.Engine().(*cachedEngine)
	for _, repr := range *f.shipped {
		b := eng.NewBatch()
		if err := eng.AppendRepr(b, repr); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	*f.shipped = nil
	if _, err := f.secondary.ReloadCatalog(); err != nil {
		t.Fatal(err)
	}
}

// fill reads every key and range of the fixture twice on both stores, so
// the caches hold them, and checks that the second read was served.
func (f *residentFixture) fill(t *testing.T) {
	for _, s := range []*Store{f.primary, f.secondary} {
		f.noteEntries(t, s.Engine())
		residentReads(t, s.Engine(), f)
		before := s.resident.Stats().Hits
		residentReads(t, s.Engine(), f)
		if hits := s.resident.Stats().Hits - before; hits < int64(len(f.ranges)+3) {
			t.Fatalf("the cache served %d of the second reads", hits)
		}
	}
}

// check compares every read through s's cache with its storage.
func (f *residentFixture) check(t *testing.T, who string, s *Store) {
	t.Helper()
	snap := s.Engine().NewSnapshot()
	defer snap.Close()
	f.noteEntries(t, snap)
	got, want := residentReads(t, s.Engine(), f), residentReads(t, snap, f)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: through the cache %s, in storage %s", who, got[i], want[i])
		}
	}
}

// noteEntries adds the TTL index's entries in r to f.entries.
func (f *residentFixture) noteEntries(t *testing.T, r storage.Reader) {
	t.Helper()
	it, err := r.NewIter(f.ttl, prefixEnd(f.ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		f.entries[string(it.Key())] = true
	}
}

func residentReads(t *testing.T, r storage.Reader, f *residentFixture) []string {
	t.Helper()
	var out []string
	keys := slices.Clone(f.docKeys)
	for _, k := range slices.Sorted(maps.Keys(f.entries)) {
		keys = append(keys, []byte(k))
	}
	for _, k := range keys {
		v, err := r.Get(k)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%x=%x", k, v))
	}
	for _, lo := range f.ranges {
		it, err := r.NewIter(lo, prefixEnd(lo))
		if err != nil {
			t.Fatal(err)
		}
		var entries [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			entries = append(entries, bytes.Clone(it.Key()), bytes.Clone(it.Value()))
		}
		_ = it.Close()
		out = append(out, fmt.Sprintf("%x=%x", lo, entries))
	}
	return out
}

// cachedEngine is an in-memory pebble store with a resident cache.
type cachedEngine struct {
	*pebblestore.Store
	cache *rescache.Cache
}

func openCachedEngine(t *testing.T, clk clock.Clock) *cachedEngine {
	t.Helper()
	cache := rescache.New(1<<20, clk)
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Resident: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return &cachedEngine{Store: eng, cache: cache}
}

// shippingEngine keeps the encoded writes of every batch committed.
type shippingEngine struct {
	storage.Engine
	out *[][]byte
}

func (e shippingEngine) NewBatch() storage.Batch {
	return shippingBatch{Batch: e.Engine.NewBatch(), out: e.out}
}

type shippingBatch struct {
	storage.Batch
	out *[][]byte
}

func (b shippingBatch) Commit(sync bool) error {
	repr, err := b.Batch.(storage.Encodable).Repr()
	if err != nil {
		return err
	}
	if err := b.Batch.Commit(sync); err != nil {
		return err
	}
	*b.out = append(*b.out, repr)
	return nil
}

// DeleteExpired forwards, as the change log engine's batch does.
func (b shippingBatch) DeleteExpired(key []byte, expiredAt int64) error {
	return b.Batch.(storage.ExpiredDeleter).DeleteExpired(key, expiredAt)
}

// NoteSoleEntry forwards, as the change log engine's batch does.
func (b shippingBatch) NoteSoleEntry(lower, key, value []byte) {
	b.Batch.(storage.SoleEntryNoter).NoteSoleEntry(lower, key, value)
}

// TestClaimedUniqueValuesAreResident: a write that claims a unique
// index's value nobody held leaves that value's range in the cache, so a
// session's first lookup by token is a memory read. In an index that is
// not unique, the first lookup reads its range from storage and warms the
// index (pebblestore/warm.go): once that has ended, every other value's
// first lookup is a memory read too.
func TestClaimedUniqueValuesAreResident(t *testing.T) {
	s, _ := openStore(t)
	c, _ := s.CreateCollection("db", "c", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}, {Key: "unique", Value: true}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "user", Value: 1}}}, {Key: "name", Value: "user_1"}})
	for i := range 20 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "token", Value: fmt.Sprint("t", i)}, {Key: "user", Value: i}})
	}
	misses := func(filter bson.D) int64 {
		t.Helper()
		before := s.resident.Stats().Misses
		if doc, err := c.FindOne(filter); err != nil || doc == nil {
			t.Fatalf("find %v: %v, %v", filter, doc, err)
		}
		return s.resident.Stats().Misses - before
	}
	for i := range 20 {
		if n := misses(bson.D{{Key: "token", Value: fmt.Sprint("t", i)}}); n != 0 {
			t.Fatalf("the first find of an inserted token missed the cache %d times", n)
		}
	}
	if n := misses(bson.D{{Key: "user", Value: 0}}); n != 1 {
		t.Fatalf("the first find by a field of an index that is not unique missed %d times; want its range read once", n)
	}
	for deadline := time.Now().Add(30 * time.Second); s.resident.Stats().WarmUps == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the miss warmed no index")
		}
	}
	for i := 1; i < 20; i++ {
		if n := misses(bson.D{{Key: "user", Value: i}}); n != 0 {
			t.Fatalf("after the warm-up, the first find of user %d missed the cache %d times", i, n)
		}
	}
}

func modify(t *testing.T, c *Collection, id string, fn func(bson.D) Change) {
	t.Helper()
	if _, err := c.Modify(id, WriteOptions{}, func(doc bson.D) (Change, error) { return fn(doc), nil }); err != nil {
		t.Fatal(err)
	}
}

func indexByName(t *testing.T, c *Collection, name string) *indexState {
	t.Helper()
	for _, ix := range c.state.Load().indexes {
		if ix.def.Name == name {
			return ix
		}
	}
	t.Fatalf("no index %s", name)
	return nil
}

// TestExpiredDocumentsLeaveTheCache: a cached document, and its TTL
// entry (held for the next touch), leave the cache at its expiry (the
// monitor's pass sweeps), before the monitor deletes them, and no read
// returns the document meanwhile.
func TestExpiredDocumentsLeaveTheCache(t *testing.T) {
	s, clk := openStore(t)
	c, _ := s.CreateCollection("db", "c", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 10}})
	for i := range 5 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "t", Value: date(t0)}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: "live"}, {Key: "t", Value: date(t0.Add(time.Hour))}})
	for _, id := range []any{0, 1, 2, 3, 4, "live"} {
		findByID(t, c, id)
	}
	before := s.resident.Stats()
	if before.Items != 12 {
		t.Fatalf("the cache holds %d items after 6 documents were written and read; want them and their TTL entries", before.Items)
	}
	clk.Advance(10 * time.Second) // the expiry instant: expired ($lte)
	c.BeginExpiry("t_1", clk.Now())
	after := s.resident.Stats()
	if after.Items != 2 || after.ExpiredEvictions-before.ExpiredEvictions != 10 {
		t.Fatalf("after the expiry: %d items, %d expired evictions; want 2 and 10", after.Items, after.ExpiredEvictions-before.ExpiredEvictions)
	}
	if n := countMatching(t, c, nil); n != 1 {
		t.Fatalf("a read returned %d documents after 5 of 6 expired", n)
	}
}

// TestInsertsNeverPushOutReadDocuments: written documents the cache did
// not hold take only its spare room, so a document that was read stays
// resident through any number of inserts, and a write of it keeps its
// new version there (a touch of a session stays a memory read).
func TestInsertsNeverPushOutReadDocuments(t *testing.T) {
	s, _ := openStoreCache(t, true, 64<<10)
	c, _ := s.CreateCollection("db", "c", CreateOptions{})
	// Each insert claims a unique value too, whose range it installs.
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}})
	insert(t, c, bson.D{{Key: "_id", Value: "read"}, {Key: "n", Value: 0}})
	findByID(t, c, "read")
	pad := strings.Repeat("x", 200)
	for i := range 2000 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}, {Key: "k", Value: i}})
	}
	st := s.resident.Stats()
	if st.Evictions != 0 || st.Bytes > st.MaxBytes {
		t.Fatalf("after 2,000 inserts into a 64 KiB cache: %d evictions, %d of %d bytes; want none evicted", st.Evictions, st.Bytes, st.MaxBytes)
	}
	if st.Items == 0 {
		t.Fatal("the inserts left the cache's spare room empty")
	}
	if _, err := c.Modify("read", WriteOptions{}, func(cur bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: "read"}, {Key: "n", Value: 1}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	hits := s.resident.Stats().Hits
	if doc := findByID(t, c, "read"); doc[1].Value != int32(1) {
		t.Fatalf("read %v after the write", doc)
	}
	if s.resident.Stats().Hits != hits+1 {
		t.Fatal("the document read before the inserts and written after them was not read from the cache")
	}
}

func findByID(t *testing.T, c *Collection, id any) bson.D {
	t.Helper()
	doc, err := c.FindOne(bson.D{{Key: "_id", Value: id}})
	if err != nil || doc == nil {
		t.Fatalf("find _id %v: %v, %v", id, doc, err)
	}
	return doc
}
