package docstore

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func lruColl(t *testing.T, limit bson.D, opts ...bson.E) (*Collection, func(id string, at time.Time, size int)) {
	t.Helper()
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "cache", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := append(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "lru"}, {Key: "lruLimit", Value: limit}}, opts...)
	mustIndex(t, c, spec)
	put := func(id string, at time.Time, size int) {
		t.Helper()
		insert(t, c, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: date(at)}, {Key: "body", Value: string(make([]byte, size))}})
	}
	return c, put
}

func TestLRULimitEvictsLowestDates(t *testing.T) {
	c, put := lruColl(t, bson.D{{Key: "documents", Value: 3}})
	for i := 0; i < 5; i++ {
		put(fmt.Sprint("p", i), t0.Add(time.Duration(i)*time.Minute), 10)
		if n := c.Count(); n > 3 {
			t.Fatalf("after insert %d the collection holds %d documents, limit 3", i, n)
		}
	}
	if ids := liveIDs(t, c); len(ids) != 3 || !ids["p2"] || !ids["p3"] || !ids["p4"] {
		t.Fatalf("kept %v, want p2 p3 p4 (the latest)", ids)
	}
	// The document written is never evicted, even with the lowest date.
	put("old", t0.Add(-time.Hour), 10)
	if ids := liveIDs(t, c); len(ids) != 3 || !ids["old"] || ids["p2"] {
		t.Fatalf("kept %v, want old, p3, p4", ids)
	}
	// The next write evicts "old": its entry lies below where the last
	// eviction stopped (the mark), and the walk must still find it.
	put("new", t0.Add(time.Hour), 10)
	if ids := liveIDs(t, c); len(ids) != 3 || ids["old"] || !ids["new"] {
		t.Fatalf("kept %v, want p3, p4, new", ids)
	}
	if n := c.store.LRUEvicted(); n != 4 {
		t.Fatalf("LRUEvicted = %d, want 4", n)
	}
	requireValid(t, c)
}

func TestLRULimitBytesAndGrowingUpdates(t *testing.T) {
	c, put := lruColl(t, bson.D{{Key: "bytes", Value: 1000}})
	for i := 0; i < 4; i++ {
		put(fmt.Sprint("p", i), t0.Add(time.Duration(i)*time.Minute), 200)
	}
	if c.DataSize() > 1000 || c.Count() != 4 {
		t.Fatalf("%d documents, %d bytes", c.Count(), c.DataSize())
	}
	// p3 grows past the limit: the lowest dates go, p3 stays.
	_, err := c.Modify("p3", WriteOptions{}, func(doc bson.D) (Change, error) {
		next := append(bson.D(nil), doc...)
		next[2].Value = string(make([]byte, 600))
		return Change{Kind: Replace, Doc: next}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids := liveIDs(t, c); c.DataSize() > 1000 || !ids["p3"] || ids["p0"] {
		t.Fatalf("after growth: %v, %d bytes", ids, c.DataSize())
	}
	requireValid(t, c)
}

func TestLRULimitDescendingIndexAndExpiredVictims(t *testing.T) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "d", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: -1}}}, {Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 2}}}, {Key: "expireAfterSeconds", Value: 60}})
	for i := 0; i < 3; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	if ids := liveIDs(t, c); len(ids) != 2 || ids[int32(0)] {
		t.Fatalf("descending index kept %v, want 1 and 2", ids)
	}
	// Once 1 has expired, the next eviction reports it as an expiry.
	clk.Advance(61 * time.Second)
	before := s.LRUEvicted()
	insert(t, c, bson.D{{Key: "_id", Value: 9}, {Key: "at", Value: date(clk.Now())}})
	if s.LRUEvicted() != before {
		t.Fatal("an expired victim counted as an eviction")
	}
	requireValid(t, c)
}

// TestLRUPageCacheKeepsMostRead: with refreshOnRead on the same index,
// reads move pages up, and inserts evict the least recently read.
func TestLRUPageCacheKeepsMostRead(t *testing.T) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "pages", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "used", Value: 1}}}, {Key: "name", Value: "lru"},
		{Key: "expireAfterSeconds", Value: 86400}, {Key: "refreshOnRead", Value: true}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 10}}}})
	written := map[int]bson.D{}
	page := func(i int) bson.D {
		written[i] = bson.D{{Key: "_id", Value: i}, {Key: "used", Value: date(clk.Now())}}
		return written[i]
	}
	for i := 0; i < 10; i++ {
		insert(t, c, page(i))
		clk.Advance(time.Minute)
	}
	// Three hours later (past the throttle's 2.4 h) pages 0-4 are read;
	// 5-9 are not.
	clk.Advance(3 * time.Hour)
	for i := 0; i < 5; i++ {
		if _, err := c.RefreshOnRead(written[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.RefreshedOnRead(); n != 5 {
		t.Fatalf("%d refreshes, want 5", n)
	}
	clk.Advance(time.Hour)
	for i := 10; i < 15; i++ {
		insert(t, c, page(i))
	}
	ids := liveIDs(t, c)
	for i := 0; i < 15; i++ {
		if want := i < 5 || i >= 10; ids[int32(i)] != want {
			t.Fatalf("page %d kept=%v; kept %v, want the 5 read and the 5 new", i, ids[i], ids)
		}
	}
}
