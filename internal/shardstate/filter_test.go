package shardstate

import (
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFilterPartitionsDocuments: over random documents, every document is
// owned by exactly one of the shards, the one its hashed key's chunk
// names; a document whose key holds an array is kept by all.
func TestFilterPartitionsDocuments(t *testing.T) {
	shards := []string{"shA", "shB", "shC"}
	table := (&fakeConfig{}).shard(t, "db.c", shards...)
	filters := map[string]*Filter{}
	for _, s := range shards {
		filters[s] = NewFilter(table, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	owned := map[string]int{}
	for i := range 3000 {
		var k any = rng.Int64()
		switch i % 3 {
		case 1:
			k = bson.NewObjectID()
		case 2:
			k = string(rune('a' + i%26))
		}
		doc := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: k}}
		h, err := table.Pattern().HashOf(doc)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := table.ChunkForHash(h)
		owners := 0
		for s, f := range filters {
			if f.Owns(doc) {
				owners++
				owned[s]++
				if s != c.Shard {
					t.Fatalf("%v is owned by %s, its chunk is on %s", doc, s, c.Shard)
				}
			}
		}
		if owners != 1 {
			t.Fatalf("%v has %d owners", doc, owners)
		}
	}
	for _, s := range shards {
		if owned[s] < 500 {
			t.Errorf("%s owns %d of 3000 documents: the hash should spread them", s, owned[s])
		}
	}
	missing := bson.D{{Key: "_id", Value: "no key"}}
	arrayKey := bson.D{{Key: "_id", Value: "array"}, {Key: "k", Value: bson.A{1, 2}}}
	if owners := countOwners(filters, missing); owners != 1 {
		t.Errorf("a document without the key (hashed as null) has %d owners, want 1", owners)
	}
	if owners := countOwners(filters, arrayKey); owners != len(shards) {
		t.Errorf("a document with an array key has %d owners, want all %d", owners, len(shards))
	}
}

func countOwners(filters map[string]*Filter, doc bson.D) int {
	n := 0
	for _, f := range filters {
		if f.Owns(doc) {
			n++
		}
	}
	return n
}
