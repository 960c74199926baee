package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// TestEveryKeyUnderADeclaredTag: after a server has stored documents,
// secondary and TTL indexes, a change log and a capped profile, every key
// in its store starts with a tag that internal/keyspace declares. The
// documents expire in an hour, so the TTL deleter leaves their keys.
func TestEveryKeyUnderADeclaredTag(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, app.Config{DataDir: dir})
	c := connect(t, s)
	db := c.Database("test")
	cs, err := db.Collection("c").Watch(ctxT(t), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	createTTL(t, db, "c", "at", 3600)
	if _, err := db.Collection("c").Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := db.Collection("c").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 3}, {Key: "at", Value: bson.NewDateTimeFromTime(time.Now())}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateCollection(ctxT(t), "capped", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)); err != nil {
		t.Fatal(err)
	}
	runCmd(t, db, bson.D{{Key: "profile", Value: 2}})
	runCmd(t, db, bson.D{{Key: "find", Value: "c"}})
	if err := cs.Close(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	s.stop(t)

	store, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	declared := map[byte]bool{}
	for _, e := range keyspace.All() {
		declared[byte(e.Tag)] = true
	}
	it, err := store.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	seen := map[byte]int{}
	for ok := it.First(); ok; ok = it.Next() {
		seen[it.Key()[0]]++
	}
	for tag, n := range seen {
		if !declared[tag] {
			t.Errorf("%d keys under the undeclared tag %q", n, tag)
		}
	}
	for _, want := range []keyspace.Tag{keyspace.Catalog, keyspace.NextID, keyspace.Document, keyspace.Index, keyspace.Events, keyspace.Recording} {
		if seen[byte(want)] == 0 {
			t.Errorf("no key under %q: the test no longer exercises it", want)
		}
	}
	t.Logf("keys by tag: %v", seen)
}
