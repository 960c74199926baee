package docstore

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
)

// TestIndexDuplicatesStopsWithItsContext: collMod's scan for the keys
// that stop an index becoming unique ends with its context (a client's
// maxTimeMS, killOp or disconnect), which it is given with the edit held.
func TestIndexDuplicatesStopsWithItsContext(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, ixSpec("k_1", bson.D{{Key: "k", Value: 1}}))
	for i := range 1000 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 500}})
	}
	if err := c.ModifyIndex("k_1", func(ix *catalog.Index) error { ix.PrepareUnique = true; return nil }); err != nil {
		t.Fatal(err)
	}
	e := c.Edit()
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.IndexDuplicates(ctx, "k_1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the context's end", err)
	}
	dups, err := e.IndexDuplicates(context.Background(), "k_1")
	if err != nil || len(dups) != 500 {
		t.Fatalf("%d duplicated keys, %v; want 500", len(dups), err)
	}
}
