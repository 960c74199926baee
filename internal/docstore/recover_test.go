package docstore

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// openFaultyStore opens a docstore on a pebble store whose disk full can
// fill, recovering every few milliseconds.
func openFaultyStore(t *testing.T) (*Store, *faultfs.DiskFull) {
	t.Helper()
	full := &faultfs.DiskFull{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := pebblestore.Open(pebblestore.Options{
		Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), RecoverInterval: 5 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	s, err := Open(eng, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s, full
}

func insertSynced(t *testing.T, c *Collection, docs ...bson.D) {
	t.Helper()
	for _, doc := range docs {
		d, err := PrepareInsert(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Insert(d, WriteOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// failInserts fills the disk and inserts with sync until one fails. The
// failing insert commits to pebble's memtable (and is counted) before its
// WAL write and sync fail, so storage loses it at the reopen.
func failInserts(t *testing.T, c *Collection, full *faultfs.DiskFull) {
	t.Helper()
	full.Set(true)
	for i := range 100 {
		d, err := PrepareInsert(bson.D{{Key: "_id", Value: 1000 + i}, {Key: "k", Value: i}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Insert(d, WriteOptions{Sync: true}); err != nil {
			if !errors.Is(err, storage.ErrWriteFailed) {
				t.Fatalf("insert on a full disk: %v, want ErrWriteFailed", err)
			}
			return
		}
	}
	t.Fatal("inserts kept succeeding with the disk full")
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestRecoverRecountsCollections: after the storage reopens, the counters
// match what storage kept (validate checks them against the documents),
// and the same Collection keeps serving.
func TestRecoverRecountsCollections(t *testing.T) {
	s, full := openFaultyStore(t)
	c, err := s.CreateCollection("db", "kept", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})
	for i := range 10 {
		insertSynced(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}})
	}
	failInserts(t, c, full)
	if n := c.Count(); n <= 10 {
		t.Fatalf("count after the failed insert = %d; the test needs it counted", n)
	}

	full.Set(false)
	waitUntil(t, "the count to match storage", func() bool { return c.Count() == 10 })
	if got := s.Collection("db", "kept"); got != c {
		t.Fatal("the collection was replaced by the reload")
	}
	requireValid(t, c)
	insertSynced(t, c, bson.D{{Key: "_id", Value: "after"}, {Key: "k", Value: -1}})
	if n := c.Count(); n != 11 {
		t.Fatalf("count after a new insert = %d, want 11", n)
	}
	requireValid(t, c)
}

// TestRecoverRestoresAFailedDrop: a drop that failed during the outage took
// the collection out of the catalog in memory but not in storage; the
// reload puts it back, with its documents counted.
func TestRecoverRestoresAFailedDrop(t *testing.T) {
	s, full := openFaultyStore(t)
	c, err := s.CreateCollection("db", "dropme", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, c, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}})
	failInserts(t, c, full)
	if _, err := s.DropCollection("db", "dropme"); !errors.Is(err, storage.ErrWriteFailed) {
		t.Fatalf("drop on a full disk: %v, want ErrWriteFailed", err)
	}
	if s.Collection("db", "dropme") != nil {
		t.Fatal("the failed drop left the collection listed; the test needs it gone")
	}

	full.Set(false)
	waitUntil(t, "the collection to come back", func() bool { return s.Collection("db", "dropme") != nil })
	back := s.Collection("db", "dropme")
	waitUntil(t, "its count", func() bool { return back.Count() == 3 })
	requireValid(t, back)
	if _, err := s.DropCollection("db", "dropme"); err != nil {
		t.Fatalf("drop after recovery: %v", err)
	}
	if names := s.CollectionNames("db"); len(names) != 0 {
		t.Fatalf("collections after the drop: %v", names)
	}
}

// TestReloadCatalogCountsOnlyNewCollections: after a replicated batch
// changes the catalog, a collection the member knew keeps its counters
// (the batch's deltas bring them up to date) and only one new to it is
// counted from storage; a snapshot's reload counts every collection.
func TestReloadCatalogCountsOnlyNewCollections(t *testing.T) {
	s, _ := openStore(t)
	known, err := s.CreateCollection("db", "known", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, known, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	// Another store on the same engine stands for the primary's writes
	// arriving through the log: storage changes, s's counters do not.
	other, err := Open(s.eng, Options{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, other.Collection("db", "known"), bson.D{{Key: "_id", Value: 3}})
	fresh, err := other.CreateCollection("db", "fresh", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, fresh, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}})

	counted, err := s.ReloadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	freshID := fresh.Meta().ID
	if len(counted) != 1 || !counted[freshID] {
		t.Fatalf("counted %v, want only the new collection %d", counted, freshID)
	}
	if n := s.Collection("db", "known").Count(); n != 2 {
		t.Fatalf("known collection's count after the catalog reload: %d, want 2 (kept, not recounted)", n)
	}
	if n := s.Collection("db", "fresh").Count(); n != 3 {
		t.Fatalf("new collection's count: %d, want 3 (counted from storage)", n)
	}
	s.ApplyCounts(known.Meta().ID, 1, 0) // the batch's delta
	if n := s.Collection("db", "known").Count(); n != 3 {
		t.Fatalf("known collection's count after its delta: %d, want 3", n)
	}
	s.ApplyCounts(known.Meta().ID, 5, 0) // a wrong delta, which a snapshot's reload repairs
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := s.Collection("db", "known").Count(); n != 3 {
		t.Fatalf("count after a full reload: %d, want 3", n)
	}
}
