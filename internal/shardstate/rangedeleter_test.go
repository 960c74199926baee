package shardstate

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// rangeDeletionCase is a collection of docs documents keyed k = 0..docs-1
// (inserted in _id order unlike k order when shuffled), a range of k,
// and which of the range's documents the shard still owns.
type rangeDeletionCase struct {
	name     string
	docs     int
	min, max int
	owned    func(k int) bool
}

// TestRangeDeletionRemovesExactlyTheOrphans: whatever the number of
// writes and scans the deleter needs (fewer documents than one scan,
// orphans filling several delete batches, owned documents between them),
// and whether it reads the shard key's index (ranged or hashed) or the
// whole collection, it removes every document of the range the shard
// does not own, and nothing else.
func TestRangeDeletionRemovesExactlyTheOrphans(t *testing.T) {
	none := func(int) bool { return false }
	cases := []rangeDeletionCase{
		{name: "empty collection", docs: 0, min: 0, max: 10, owned: none},
		{name: "within one scan", docs: 100, min: 10, max: 60, owned: none},
		{name: "orphans fill several delete batches", docs: 3 * scanBatch, min: 100, max: 100 + 5*deleteBatch + 7, owned: none},
		{name: "owned documents between orphans", docs: 3*scanBatch + 11, min: 0, max: 2*scanBatch + 5, owned: func(k int) bool { return k%3 == 0 }},
		{name: "the whole collection", docs: scanBatch + 1, min: -1, max: scanBatch + 2, owned: none},
	}
	for _, key := range []string{"no index", "ranged index", "hashed index"} {
		for _, tc := range cases {
			t.Run(key+"/"+tc.name, func(t *testing.T) {
				coll, p := rangeDeletionColl(t, tc.docs)
				r := migrate.Range{Min: bson.D{{Key: "k", Value: tc.min}}, Max: bson.D{{Key: "k", Value: tc.max}}}
				switch key {
				case "ranged index":
					createIndex(t, coll, bson.D{{Key: "k", Value: int32(1)}, {Key: "pad", Value: int32(1)}})
				case "hashed index":
					p = hashedK(t)
					createIndex(t, coll, bson.D{{Key: "k", Value: "hashed"}})
					r = migrate.Range{Min: bson.D{{Key: "k", Value: int64(-1 << 62)}}, Max: bson.D{{Key: "k", Value: int64(tc.max) << 50}}}
				}
				owns := func(doc bson.D) bool { return tc.owned(kOf(t, doc)) }
				want := map[int]bool{}
				for k := range tc.docs {
					doc := bson.D{{Key: "_id", Value: idOf(k)}, {Key: "k", Value: k}}
					want[k] = !inRange(p, r, doc) || tc.owned(k)
				}
				if err := deleteOrphans(context.Background(), coll, r, p, owns); err != nil {
					t.Fatal(err)
				}
				for k := range tc.docs {
					doc, err := coll.FindOne(bson.D{{Key: "_id", Value: idOf(k)}})
					if err != nil {
						t.Fatal(err)
					}
					if (doc != nil) != want[k] {
						t.Fatalf("k %d: stored %v after the deletion, want %v", k, doc != nil, want[k])
					}
				}
			})
		}
	}
}

func hashedK(t *testing.T) *shardkey.Pattern {
	p, err := shardkey.Parse(bson.D{{Key: "k", Value: "hashed"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func createIndex(t *testing.T, coll *docstore.Collection, key bson.D) {
	t.Helper()
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: key}, {Key: "name", Value: "shard key"}})
	if err == nil {
		_, err = coll.CreateIndexes([]*catalog.Index{ix})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRangeDeletionStopsWithItsContext: a deletion whose context ended
// returns its error and deletes nothing more.
func TestRangeDeletionStopsWithItsContext(t *testing.T) {
	coll, p := rangeDeletionColl(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := migrate.Range{Min: bson.D{{Key: "k", Value: 0}}, Max: bson.D{{Key: "k", Value: 10}}}
	err := deleteOrphans(ctx, coll, r, p, func(bson.D) bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("deleteOrphans with an ended context: %v", err)
	}
	if n := coll.Count(); n != 10 {
		t.Fatalf("%d documents left, want all 10", n)
	}
}

// BenchmarkRangeDeletion deletes a sixteenth of a 50,000-document
// collection (the share one chunk of the bench's sessions is of a shard),
// read through the shard key's index and through the collection.
func BenchmarkRangeDeletion(b *testing.B) {
	const docs = 50_000
	r := migrate.Range{Min: bson.D{{Key: "k", Value: 0}}, Max: bson.D{{Key: "k", Value: docs / 16}}}
	for _, indexed := range []bool{true, false} {
		b.Run(fmt.Sprintf("index=%v", indexed), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				coll, p := rangeDeletionColl(b, docs)
				if indexed {
					ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: int32(1)}}}, {Key: "name", Value: "k_1"}})
					if err == nil {
						_, err = coll.CreateIndexes([]*catalog.Index{ix})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := deleteOrphans(context.Background(), coll, r, p, func(bson.D) bool { return false }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rangeDeletionColl stores docs documents whose _id order is not their k
// order, so that a range of k is spread over the whole collection.
func rangeDeletionColl(tb testing.TB, docs int) (*docstore.Collection, *shardkey.Pattern) {
	tb.Helper()
	coll, _, err := memoryStore(tb).GetOrCreate("db", "c")
	if err != nil {
		tb.Fatal(err)
	}
	batch := make([]bson.D, 0, 1000)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := coll.ApplyFromMigrate(batch, nil, nil); err != nil {
			tb.Fatal(err)
		}
		batch = batch[:0]
	}
	for k := range docs {
		batch = append(batch, bson.D{{Key: "_id", Value: idOf(k)}, {Key: "k", Value: k}, {Key: "pad", Value: "session payload"}})
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	p, err := shardkey.Parse(bson.D{{Key: "k", Value: int32(1)}})
	if err != nil {
		tb.Fatal(err)
	}
	return coll, p
}

// idOf gives k an _id that sorts by k's reversed digits.
func idOf(k int) string {
	s := []byte(fmt.Sprintf("%06d", k))
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return string(s)
}

func kOf(tb testing.TB, doc bson.D) int {
	for _, e := range doc {
		if e.Key == "k" {
			switch k := e.Value.(type) {
			case int32:
				return int(k)
			case int64:
				return int(k)
			}
		}
	}
	tb.Fatalf("document %v has no int k", doc)
	return 0
}
