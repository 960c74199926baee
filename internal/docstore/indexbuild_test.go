package docstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// buildDocs is the collection the build tests index: more than two
// batches, so that a build paused after its first batch has read
// _id 0–255 and not yet 256–599.
const buildDocs = 600

// buildColl makes a collection of buildDocs documents with a TTL index
// t_1 (refreshOnRead) and a plain index n_1: _id 550 and up have
// expired and are still stored.
func buildColl(t *testing.T) (*Collection, *clock.Manual) {
	t.Helper()
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, ixSpec("t_1", bson.D{{Key: "t", Value: 1}}, bson.E{Key: "expireAfterSeconds", Value: 60}, bson.E{Key: "refreshOnRead", Value: true}))
	mustIndex(t, c, ixSpec("n_1", bson.D{{Key: "n", Value: 1}}))
	for i := range buildDocs {
		at := t0.Add(time.Duration(i) * time.Second)
		if i >= 550 {
			at = t0.Add(-2 * time.Minute)
		}
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 40}, {Key: "n", Value: i}, {Key: "tags", Value: i % 3}, {Key: "t", Value: date(at)}})
	}
	return c, clk
}

// buildSpecs are the indexes the tests build together: a plain one and a
// compound one that a write turns multikey.
func buildSpecs(t *testing.T) []*catalog.Index {
	t.Helper()
	var ixs []*catalog.Index
	for _, spec := range []bson.D{
		ixSpec("k_1", bson.D{{Key: "k", Value: 1}}),
		ixSpec("tags_1_t_1", bson.D{{Key: "tags", Value: 1}, {Key: "t", Value: 1}}),
	} {
		ix, err := catalog.ParseIndexSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		ixs = append(ixs, ix)
	}
	return ixs
}

// pausedBuild runs createIndexes of ixs in the background, paused after
// its first batch until resume is called; done gives its result.
type pausedBuild struct {
	resume func()
	done   chan buildResult
}

type buildResult struct {
	res CreateIndexesResult
	err error
}

func startPausedBuild(t *testing.T, c *Collection, ixs []*catalog.Index) *pausedBuild {
	t.Helper()
	paused, release := make(chan struct{}), make(chan struct{})
	b := &pausedBuild{done: make(chan buildResult, 1)}
	b.resume = sync1(func() { close(release) })
	batches := 0
	go func() {
		res, err := c.CreateIndexesWatched(context.Background(), ixs, BuildWatch{AfterBatch: func() {
			if batches++; batches == 1 {
				close(paused)
				<-release
			}
		}})
		b.done <- buildResult{res, err}
	}()
	select {
	case <-paused:
	case r := <-b.done:
		t.Fatalf("the build ended before it paused: %v", r.err)
	}
	t.Cleanup(b.resume)
	return b
}

func sync1(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// within runs op, failing the test if it does not return within 10 s:
// under the old locking every write waited for the whole build.
func within(t *testing.T, what string, op func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the index build", what)
		return nil
	}
}

func remove(bson.D) (Change, error) { return Change{Kind: Remove}, nil }

// buildWrites are the writes a build must let through, each through one
// of the store's entry points for a write to documents, on documents the
// paused build has read (_id < 256) and has not (_id >= 256).
func buildWrites() map[string]func(c *Collection, clk *clock.Manual) error {
	return map[string]func(c *Collection, clk *clock.Manual) error{
		"Insert": func(c *Collection, _ *clock.Manual) error {
			d, err := PrepareInsert(bson.D{{Key: "_id", Value: 1000}, {Key: "k", Value: 7}, {Key: "tags", Value: bson.A{"a", "b"}}, {Key: "t", Value: date(t0)}})
			if err != nil {
				return err
			}
			return c.Insert(d, WriteOptions{})
		},
		"InsertGroup": func(c *Collection, _ *clock.Manual) error {
			var docs []GroupDoc
			for _, id := range []int{1001, 1002} {
				d, err := PrepareInsert(bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id % 40}, {Key: "tags", Value: bson.A{id, "g"}}})
				if err != nil {
					return err
				}
				docs = append(docs, GroupDoc{Doc: d})
			}
			errs, _ := c.InsertGroup(docs, true)
			return errors.Join(errs...)
		},
		"Modify": func(c *Collection, _ *clock.Manual) error {
			for id, change := range map[int]func(bson.D) (Change, error){
				5:   setField("k", 99),                     // read: its key changes
				500: setField("tags", bson.A{"x", "y", 1}), // unread: now multikey
				501: setField("n", -1),                     // unread: the new indexes' keys stay
				6:   remove,
				502: remove,
			} {
				if _, err := c.Modify(id, WriteOptions{}, change); err != nil {
					return err
				}
			}
			return nil
		},
		"ModifyGroup": func(c *Collection, _ *clock.Manual) error {
			_, err := c.ModifyGroup([]any{7, 503}, WriteOptions{}, func(_ int, doc bson.D) (Change, error) { return setField("k", 98)(doc) })
			return err
		},
		"ModifyEach": func(c *Collection, _ *clock.Manual) error {
			_, err := c.ModifyEach([]any{8, 504}, WriteOptions{}, nil, func(_ int, doc bson.D) (Change, error) { return setField("k", 97)(doc) })
			return err
		},
		"RemoveGroup": func(c *Collection, _ *clock.Manual) error {
			_, err := c.RemoveGroup([]any{9, 505}, WriteOptions{}, func(bson.D) (bool, error) { return true, nil })
			return err
		},
		"ApplyFromMigrate": func(c *Collection, _ *clock.Manual) error {
			docs := []bson.D{{{Key: "_id", Value: 2000}, {Key: "k", Value: 3}, {Key: "tags", Value: 2}}, {{Key: "_id", Value: 10}, {Key: "k", Value: 96}}}
			return c.ApplyFromMigrate(docs, []any{11, 506}, func(bson.D) bool { return true })
		},
		"BeginExpiry": func(c *Collection, clk *clock.Manual) error {
			pass := c.BeginExpiry("t_1", clk.Now()) // deletes _id 550–599, unread
			for {
				res, err := pass.Next(1000)
				if err != nil || !res.More {
					return err
				}
			}
		},
		"RefreshOnRead": func(c *Collection, clk *clock.Manual) error {
			// At t0+550s the dates of 500 and 530 (unread) are stale, not
			// expired: a read moves them, and their tags_1_t_1 keys.
			clk.Advance(550 * time.Second)
			for _, id := range []int{500, 530} {
				doc, err := c.FindOne(bson.D{{Key: "_id", Value: id}})
				if err != nil {
					return err
				}
				if got, err := c.RefreshOnRead(doc); err != nil || slices.Equal(got, doc) {
					return fmt.Errorf("refresh of %d: %v, date %v", id, err, got)
				}
			}
			return nil
		},
		"EvictToLRULimits": func(c *Collection, _ *clock.Manual) error {
			err := c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.LRUDocs = 580; return nil })
			if err != nil {
				return err
			}
			return c.EvictToLRULimits() // evicts the 20 oldest dates: 550–569, unread
		},
		"Txn": func(c *Collection, _ *clock.Manual) error {
			x := c.store.BeginTxn()
			if err := x.Insert(c, bson.D{{Key: "_id", Value: 3000}, {Key: "k", Value: 1}, {Key: "tags", Value: bson.A{"t"}}}); err != nil {
				return err
			}
			for id, change := range map[int]func(bson.D) (Change, error){13: setField("k", 95), 508: setField("k", 94), 509: remove} {
				if _, err := x.Modify(c, id, change); err != nil {
					return err
				}
			}
			return x.Commit(WriteOptions{})
		},
	}
}

// notDocumentWrites are the exported methods of *Collection that write
// no document: reads, and catalog changes (which take the schema lock
// exclusively, between two batches of a build: TestIndexBuildBesideCatalogChanges).
var notDocumentWrites = []string{
	"CandidateIDs", "Count", "DataSize", "DuplicateKeyError", "EachStored", "Expired", "ExpiredNow",
	"ExpiresAt", "FindOne", "HasTTL", "IndexSizes", "Indexes", "IsClustered", "Meta",
	"Namespace", "NextExpiry", "Plan", "PlanQuery", "Refreshed", "RefreshesOnRead", "Scan", "ScanAfter",
	"ScanKeyRange", "StorageSize", "TTLEntries", "TTLIndexes", "Validate",
	"WarnExpiring", // writes its marks, not documents
	"CreateIndexes", "CreateIndexesContext", "CreateIndexesWatched", "DropIndex", "DropIndexes", "Edit", "ModifyIndex", "SetClusteredExpiry", "SetOptions",
}

// TestIndexBuildWriteTableCoversTheStore: every exported method of
// *Collection is a row of buildWrites or named in notDocumentWrites, so
// that a new way to write documents cannot skip the build test.
func TestIndexBuildWriteTableCoversTheStore(t *testing.T) {
	rows := buildWrites()
	typ := reflect.TypeOf(&Collection{})
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		_, isRow := rows[name]
		if isRow == slices.Contains(notDocumentWrites, name) {
			t.Errorf("%s: a row of buildWrites %v, named in notDocumentWrites %v: it must be exactly one", name, isRow, !isRow)
		}
	}
}

// TestIndexBuildLetsWritesThrough pauses a build of two indexes after its
// first batch and makes, meanwhile, each kind of write to documents. Each
// must finish while the build waits (the build held the collection's
// schema lock throughout before, and writes waited for it), and the
// finished indexes must hold exactly the entries of the documents as they
// are then: validate compares every index with the documents.
func TestIndexBuildLetsWritesThrough(t *testing.T) {
	writes := buildWrites()
	names := make([]string, 0, len(writes))
	for name := range writes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c, clk := buildColl(t)
			b := startPausedBuild(t, c, buildSpecs(t))
			if err := within(t, name, func() error { return writes[name](c, clk) }); err != nil {
				t.Fatalf("the write during the build: %v", err)
			}
			b.resume()
			got := <-b.done
			if got.err != nil {
				t.Fatalf("build: %v", got.err)
			}
			if got.res.Before != 3 || got.res.After != 5 {
				t.Fatalf("indexes before %d, after %d (want 3, 5)", got.res.Before, got.res.After)
			}
			requireValid(t, c)
			requireIndexMatchesScan(t, c, "k_1", "k")
		})
	}
}

// requireIndexMatchesScan compares, for every value of field, the
// documents the index finds with a scan's.
func requireIndexMatchesScan(t *testing.T, c *Collection, index, field string) {
	t.Helper()
	for v := range 100 {
		f := mustFilter(t, bson.D{{Key: field, Value: v}})
		plan, err := c.Plan(Query{Filter: f, Hint: index})
		if err != nil {
			t.Fatal(err)
		}
		if byIndex, byScan := countPlan(t, c, plan, f), countMatching(t, c, f); byIndex != byScan {
			t.Fatalf("%s = %d: %d through %s, %d by a scan", field, v, byIndex, index, byScan)
		}
	}
}

func countPlan(t *testing.T, c *Collection, plan *Plan, f *query.Filter) int {
	t.Helper()
	it := c.Scan(plan, f)
	defer it.Close()
	n := 0
	for {
		_, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return n
		}
		n++
	}
}

func uniqueSpec(t *testing.T) []*catalog.Index {
	t.Helper()
	ix, err := catalog.ParseIndexSpec(ixSpec("n_1_k_1", bson.D{{Key: "n", Value: 1}, {Key: "k", Value: 1}}, bson.E{Key: "unique", Value: true}))
	if err != nil {
		t.Fatal(err)
	}
	return []*catalog.Index{ix}
}

// shareNewKey gives documents expired and live the unique key {n: 5200,
// k: 0}, the first with a date past its expiry.
func shareNewKey(c *Collection, expired, live int) error {
	for _, w := range []struct {
		id int
		at bson.DateTime
	}{{expired, date(t0.Add(-2 * time.Minute))}, {live, date(t0)}} {
		id, at := w.id, w.at
		_, err := c.Modify(id, WriteOptions{}, func(bson.D) (Change, error) {
			return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 5200}, {Key: "k", Value: 0}, {Key: "t", Value: at}}}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func insertDoc(c *Collection, doc bson.D) error {
	d, err := PrepareInsert(doc)
	if err != nil {
		return err
	}
	return c.Insert(d, WriteOptions{})
}

// TestIndexBuildJudgesUniqueKeysAtItsEnd: writes during a unique index's
// build are not refused, as on mongod; a key that two live documents
// hold when the build ends fails the build with E11000, and the index is
// dropped. An expired holder does not count.
func TestIndexBuildJudgesUniqueKeysAtItsEnd(t *testing.T) {
	cases := []struct {
		name  string
		write func(c *Collection, clk *clock.Manual) error
		fails bool
	}{
		{"the key of a document the build has read", func(c *Collection, _ *clock.Manual) error {
			return insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 5}, {Key: "k", Value: 5}})
		}, true},
		{"the key of a document the build has not read", func(c *Collection, _ *clock.Manual) error {
			return insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 500}, {Key: "k", Value: 20}})
		}, true},
		{"two documents the build has not read", func(c *Collection, _ *clock.Manual) error {
			_, err := c.Modify(501, WriteOptions{}, func(doc bson.D) (Change, error) {
				return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: 501}, {Key: "n", Value: 500}, {Key: "k", Value: 20}}}, nil
			})
			return err
		}, true},
		{"two new documents", func(c *Collection, _ *clock.Manual) error {
			return errors.Join(insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 5000}}),
				insertDoc(c, bson.D{{Key: "_id", Value: 1001}, {Key: "n", Value: 5000}}))
		}, true},
		{"a duplicate deleted before the end", func(c *Collection, _ *clock.Manual) error {
			if err := insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 5}, {Key: "k", Value: 5}}); err != nil {
				return err
			}
			_, err := c.Modify(1000, WriteOptions{}, remove)
			return err
		}, false},
		{"the key of an expired document the build has not read", func(c *Collection, _ *clock.Manual) error {
			return insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 560}, {Key: "k", Value: 0}})
		}, false},
		// A write gives each of two unread documents the same new key, the
		// first (in _id order) expired, then the second; the build meets
		// the expired one twice in one batch, and deletes it once.
		{"an expired holder the build meets twice", func(c *Collection, _ *clock.Manual) error {
			return shareNewKey(c, 520, 519) // 519 finds 520 its expired holder, then the build reaches 520
		}, false},
		{"an expired holder the build deletes, then meets as a holder", func(c *Collection, _ *clock.Manual) error {
			return shareNewKey(c, 519, 520) // the build deletes 519, then 520 finds it its holder
		}, false},
		{"the key of a document the build has read, expired since", func(c *Collection, clk *clock.Manual) error {
			clk.Advance(70 * time.Second) // _id 0–9 expire
			return insertDoc(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 5}, {Key: "k", Value: 5}})
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := buildColl(t)
			b := startPausedBuild(t, c, uniqueSpec(t))
			if err := within(t, "the write", func() error { return tc.write(c, clk) }); err != nil {
				t.Fatalf("the write during the build was refused: %v", err)
			}
			b.resume()
			got := <-b.done
			requireValid(t, c)
			if !tc.fails {
				if got.err != nil {
					t.Fatalf("build: %v", got.err)
				}
				requireIndexMatchesScan(t, c, "n_1_k_1", "n")
				return
			}
			if me := mongoerr.As(got.err); me == nil || me.Code != mongoerr.DuplicateKey {
				t.Fatalf("build: %v, want E11000", got.err)
			}
			if n := len(c.Indexes()); n != 3 {
				t.Fatalf("%d indexes after the failed build, want 3", n)
			}
		})
	}
}

// TestIndexBuildJoinsTheSameBuild: a second request for an index being
// built waits for that build and reports it as existing.
func TestIndexBuildJoinsTheSameBuild(t *testing.T) {
	c, _ := buildColl(t)
	b := startPausedBuild(t, c, buildSpecs(t))
	second := make(chan buildResult, 1)
	go func() {
		res, err := c.CreateIndexes(buildSpecs(t)[:1])
		second <- buildResult{res, err}
	}()
	select {
	case r := <-second:
		t.Fatalf("the second request returned while the build ran: %+v, %v", r.res, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	b.resume()
	if got := <-b.done; got.err != nil {
		t.Fatal(got.err)
	}
	r := <-second
	if r.err != nil || !r.res.AllExisted || r.res.Before != 5 {
		t.Fatalf("second request: %+v, %v", r.res, r.err)
	}
}

// TestIndexBuildAbortedByDrops: dropping every index of a build, or its
// collection, stops the build with IndexBuildAborted, as on mongod.
func TestIndexBuildAbortedByDrops(t *testing.T) {
	drops := map[string]func(c *Collection) error{
		"DropIndexes":    func(c *Collection) error { return c.DropIndexes([]string{"tags_1_t_1", "k_1"}) },
		"DropCollection": func(c *Collection) error { _, err := c.store.DropCollection("db", "c"); return err },
		"DropDatabase":   func(c *Collection) error { return c.store.DropDatabase("db") },
	}
	for name, drop := range drops {
		t.Run(name, func(t *testing.T) {
			c, _ := buildColl(t)
			b := startPausedBuild(t, c, buildSpecs(t))
			if err := within(t, name, func() error { return drop(c) }); err != nil {
				t.Fatal(err)
			}
			b.resume()
			got := <-b.done
			if me := mongoerr.As(got.err); me == nil || me.Code != mongoerr.IndexBuildAborted {
				t.Fatalf("build: %v, want IndexBuildAborted", got.err)
			}
			if name == "DropIndexes" {
				if n := len(c.Indexes()); n != 3 {
					t.Fatalf("%d indexes after the aborted build, want 3", n)
				}
				requireValid(t, c)
			}
		})
	}
}

// TestIndexBuildRefusesPartialNames: the store's calls that name one
// index find a building index only as mongod's commands do. dropIndexes
// of part of a build (mongod aborts builds whole) and collMod of a
// building index answer IndexNotFound and change nothing; the build then
// ends with both indexes ready.
func TestIndexBuildRefusesPartialNames(t *testing.T) {
	modify := func(ix *catalog.Index) error { ix.Hidden = true; return nil }
	calls := map[string]struct {
		call func(c *Collection) error
		msg  string
	}{
		"DropIndex":   {func(c *Collection) error { return c.DropIndex("k_1") }, "can't drop unfinished index with name: k_1"},
		"DropIndexes": {func(c *Collection) error { return c.DropIndexes([]string{"n_1", "tags_1_t_1"}) }, "can't drop unfinished index with name: tags_1_t_1"},
		"ModifyIndex": {func(c *Collection) error { return c.ModifyIndex("k_1", modify) }, "cannot find index k_1 for ns db.c"},
		"Edit.ModifyIndex": {func(c *Collection) error {
			e := c.Edit()
			defer e.Close()
			return e.ModifyIndex("tags_1_t_1", modify)
		}, "cannot find index tags_1_t_1 for ns db.c"},
	}
	for name, tc := range calls {
		t.Run(name, func(t *testing.T) {
			c, _ := buildColl(t)
			before := len(c.Indexes())
			b := startPausedBuild(t, c, buildSpecs(t))
			err := within(t, name, func() error { return tc.call(c) })
			if me := mongoerr.As(err); me == nil || me.Code != mongoerr.IndexNotFound || me.Msg != tc.msg {
				t.Fatalf("%v, want IndexNotFound %q", err, tc.msg)
			}
			b.resume()
			if got := <-b.done; got.err != nil {
				t.Fatalf("build: %v", got.err)
			}
			if n := len(c.Indexes()); n != before+2 {
				t.Fatalf("%d indexes after the build, want %d", n, before+2)
			}
			for _, ix := range c.Indexes() {
				if !ix.Ready || ix.Hidden || ix.BuildUUID != nil {
					t.Fatalf("index %s after the build: ready %v, hidden %v, build %x", ix.Name, ix.Ready, ix.Hidden, ix.BuildUUID)
				}
			}
			requireValid(t, c)
		})
	}
}

// TestIndexBuildBesideCatalogChanges: the catalog changes of
// notDocumentWrites run between two batches of a build, and the build
// still ends with complete indexes; a rename is refused while it runs,
// as mongod refuses it.
func TestIndexBuildBesideCatalogChanges(t *testing.T) {
	changes := map[string]func(c *Collection) error{
		"CreateIndexes": func(c *Collection) error {
			ix, err := catalog.ParseIndexSpec(ixSpec("tags_1", bson.D{{Key: "tags", Value: 1}}))
			if err != nil {
				return err
			}
			_, err = c.CreateIndexes([]*catalog.Index{ix})
			return err
		},
		"DropIndex": func(c *Collection) error { return c.DropIndex("n_1") },
		"ModifyIndex": func(c *Collection) error {
			return c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.ExpireAfter = 30; return nil })
		},
		"SetOptions": func(c *Collection) error { return c.SetOptions(bson.D{{Key: "validationLevel", Value: "moderate"}}) },
		"Edit":       func(c *Collection) error { return c.Edit().Commit(nil) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c, _ := buildColl(t)
			b := startPausedBuild(t, c, buildSpecs(t))
			if err := within(t, name, func() error { return change(c) }); err != nil {
				t.Fatal(err)
			}
			b.resume()
			if got := <-b.done; got.err != nil {
				t.Fatal(got.err)
			}
			requireValid(t, c)
			requireIndexMatchesScan(t, c, "k_1", "k")
		})
	}
	t.Run("RenameCollection", func(t *testing.T) {
		c, _ := buildColl(t)
		b := startPausedBuild(t, c, buildSpecs(t))
		err := c.store.RenameCollection("db", "c", "db", "d", false)
		if me := mongoerr.As(err); me == nil || me.Code != mongoerr.BackgroundOperationInProgressForNamespace {
			t.Fatalf("rename during the build: %v", err)
		}
		b.resume()
		if got := <-b.done; got.err != nil {
			t.Fatal(got.err)
		}
		if err := c.store.RenameCollection("db", "c", "db", "d", false); err != nil {
			t.Fatalf("rename after the build: %v", err)
		}
	})
}

// TestIndexBuildEndsTransactionsAcrossIt: a transaction that began before
// a build's start, or before its end, cannot commit: it planned its
// writes for another index set (a unique index being built refuses no
// duplicate; a ready one does).
func TestIndexBuildEndsTransactionsAcrossIt(t *testing.T) {
	c, _ := buildColl(t)
	before := c.store.BeginTxn()
	if err := before.Insert(c, bson.D{{Key: "_id", Value: 1000}, {Key: "n", Value: 5}, {Key: "k", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	b := startPausedBuild(t, c, uniqueSpec(t))
	if me := mongoerr.As(before.Commit(WriteOptions{})); me == nil || me.Code != mongoerr.WriteConflict {
		t.Fatalf("a transaction from before the build's start committed: %v", me)
	}
	during := c.store.BeginTxn()
	if err := during.Insert(c, bson.D{{Key: "_id", Value: 1001}, {Key: "n", Value: 6}, {Key: "k", Value: 6}}); err != nil {
		t.Fatal(err)
	}
	b.resume()
	if got := <-b.done; got.err != nil {
		t.Fatal(got.err)
	}
	if me := mongoerr.As(during.Commit(WriteOptions{})); me == nil || me.Code != mongoerr.WriteConflict {
		t.Fatalf("a transaction from before the build's end committed: %v", me)
	}
	requireValid(t, c)
}
