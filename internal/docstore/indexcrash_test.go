package docstore

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// TestCrashDuringIndexBuildLeavesNoIndex stops an index build half way, as
// a crash would (the catalog records the index as not ready and only some
// entries are written), then opens the store again over the same engine:
// the index is gone with all its entries, validate is clean, and building
// it again gives a complete index.
func TestCrashDuringIndexBuildLeavesNoIndex(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := Open(eng, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.CreateCollection("db", "c", CreateOptions{})
	for i := 0; i < 100; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}})
	}
	spec := bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}}
	halfBuild(t, c, spec)

	reopened, err := Open(eng, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc := reopened.Collection("db", "c")
	if len(rc.Indexes()) != 1 {
		t.Fatalf("unfinished index survived the restart: %v", rc.Indexes())
	}
	requireValid(t, rc)
	mustIndex(t, rc, spec)
	if len(rc.Indexes()) != 2 || !rc.Indexes()[1].Ready {
		t.Fatalf("rebuild: %v", rc.Indexes())
	}
	requireValid(t, rc)
}

// halfBuild records spec as a not-ready index and writes the entries of
// the first half of the documents, then stops.
func halfBuild(t *testing.T, c *Collection, spec bson.D) {
	t.Helper()
	ix, err := catalog.ParseIndexSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	c.schemaMu.Lock()
	run, err := c.newBuildLocked([]*catalog.Index{ix})
	c.schemaMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	defer c.builds.remove(run)
	run.batchDocs = 50
	if _, _, err := run.batch(context.Background(), docPrefix(c.meta().ID)); err != nil {
		t.Fatal(err)
	}
}

func requireValid(t *testing.T, c *Collection) {
	t.Helper()
	res, err := c.Validate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() {
		t.Fatalf("validate: %+v", res)
	}
}
