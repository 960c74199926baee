package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// runPass deletes everything the named TTL index says expired at now.
func runPass(t *testing.T, c *Collection, now time.Time) int {
	t.Helper()
	pass := c.BeginExpiry("t_1", now)
	deleted := 0
	for {
		res, err := pass.Next(3)
		if err != nil {
			t.Fatal(err)
		}
		deleted += res.Deleted
		if !res.More {
			return deleted
		}
	}
}

func TestPassStartsWhereThePreviousStopped(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	for i := 0; i < 10; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	clk.Set(t0.Add(4 * time.Second))
	if n := runPass(t, c, clk.Now()); n != 5 {
		t.Fatalf("first pass deleted %d, want 5", n)
	}
	ix := c.state.Load().ttl[0]
	if got, want := ix.progress.Mark(), int64(date(t0.Add(5*time.Second))); got != want {
		t.Fatalf("mark %d, want the date of the first entry left (%d)", got, want)
	}
	at, ok, err := c.NextExpiry()
	if err != nil || !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("next expiry from the mark: %v %v %v", at, ok, err)
	}
}

// A write below the mark after a pass (an old date, or an expireAt sooner
// than every other) is announced, so the next pass and NextExpiry still
// find it.
func TestEntriesWrittenBelowTheMarkAreFound(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	for i := 0; i < 10; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	clk.Set(t0.Add(4 * time.Second))
	runPass(t, c, clk.Now())
	insert(t, c, bson.D{{Key: "_id", Value: "old"}, {Key: "t", Value: date(t0.Add(-time.Hour))}})
	at, ok, _ := c.NextExpiry()
	if !ok || !at.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("next expiry %v %v: the announced old date comes first", at, ok)
	}
	if n := runPass(t, c, clk.Now()); n != 1 {
		t.Fatalf("second pass deleted %d, want the old document", n)
	}
	// An update that moves a live document's date below the mark too.
	if _, err := c.Modify(7, WriteOptions{}, func(d bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: 7}, {Key: "t", Value: date(t0)}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := runPass(t, c, clk.Now()); n != 1 {
		t.Fatalf("third pass deleted %d, want the updated document", n)
	}
	if c.Count() != 4 {
		t.Fatalf("left %d documents, want 4 (5, 6, 8, 9)", c.Count())
	}
}

// A document busy with a client is left behind: the mark stays at or
// below it, so the next pass visits it again.
func TestBusyDocumentKeepsTheMark(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	for i := 0; i < 6; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	clk.Set(t0.Add(10 * time.Second))
	stripe := c.stripeOf(keyenc.AppendValue(nil, int32(2)))
	c.stripes[stripe].Lock()
	n := runPass(t, c, clk.Now())
	c.stripes[stripe].Unlock()
	if n == 6 {
		t.Fatal("the busy document was deleted")
	}
	if n := runPass(t, c, clk.Now()); c.Count() != 0 {
		t.Fatalf("second pass deleted %d and left %d", n, c.Count())
	}
}

// docSeeker must find present keys and report absent ones whether it
// steps or seeks, including when an absent key's seek lands on the next
// key wanted.
func TestDocSeeker(t *testing.T) {
	s, _ := openStore(t)
	b := s.eng.NewBatch()
	for _, k := range []string{"a", "b", "c", "e", "f", "m", "z"} {
		if err := b.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a": true, "b": true, "d": false, "e": true, "f": true, "g": false, "m": true, "n": false, "z": true, "zz": false}
	for _, keys := range [][]string{
		{"a", "b", "d", "e", "f", "m", "z"},
		{"d", "e", "g", "m", "n", "z", "zz"},
		{"b", "f", "z"},
	} {
		it, err := s.eng.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		seek := docSeeker{it: it, stepping: true}
		for _, k := range keys {
			if got := seek.find([]byte(k)); got != want[k] {
				t.Errorf("keys %v: find(%q) = %v", keys, k, got)
			}
		}
		it.Close()
	}
}
