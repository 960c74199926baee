package expirywatch

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

var t0 = time.Unix(1_000_000, 0)

// sessions is a collection with t_1, a TTL index of 60 s, whose touches
// append entries (0003, "Touches"), and the store's manual clock.
func sessions(t *testing.T) (*docstore.Collection, *clock.Manual) {
	t.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	clk := clock.NewManual(t0)
	_, c := ttlCollection(t, eng, clk, "s", "t", 60)
	return c, clk
}

// ttlCollection opens a store over eng and makes d.coll with a TTL index
// of secs on field.
func ttlCollection(t *testing.T, eng storage.Engine, clk clock.Clock, coll, field string, secs int) (*docstore.Store, *docstore.Collection) {
	t.Helper()
	store, err := docstore.Open(eng, docstore.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.CreateCollection("d", coll, docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: field, Value: 1}}}, {Key: "name", Value: field + "_1"}, {Key: "expireAfterSeconds", Value: secs}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		t.Fatal(err)
	}
	return store, c
}

func insertAt(t *testing.T, c *docstore.Collection, id int, at time.Time) {
	t.Helper()
	d, err := docstore.PrepareInsert(bson.D{{Key: "_id", Value: id}, {Key: "t", Value: bson.NewDateTimeFromTime(at)}})
	if err == nil {
		err = c.Insert(d, docstore.WriteOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// touch sets document id's date to at, the clock there, as a session
// store's $set does.
func touch(t *testing.T, c *docstore.Collection, clk *clock.Manual, id int, at time.Time) {
	t.Helper()
	clk.Set(at)
	_, err := c.Modify(id, docstore.WriteOptions{}, func(doc bson.D) (docstore.Change, error) {
		if doc == nil {
			return docstore.Change{}, errors.New("no document")
		}
		return docstore.Change{Kind: docstore.Replace, Doc: bson.D{{Key: "_id", Value: id}, {Key: "t", Value: bson.NewDateTimeFromTime(at)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The forecast counts each document once, in the step of its own date,
// however often it was touched: below the cap of stale entries, at it (a
// touch then deletes the entry it would leave), with stale entries
// already due, and beside documents never touched.
func TestProfileCountsDocuments(t *testing.T) {
	c, clk := sessions(t)
	now := t0.Add(70 * time.Second)
	want := make([]int64, 12) // steps of 10 s from now
	count := func(date time.Time) { want[int((date.Add(time.Minute).Sub(now)-1)/(10*time.Second))]++ }
	for i, touches := range []int{3, 10, 30, 3, 10, 30, 3, 10, 30, 3, 10, 30} { // the cap is 10
		insertAt(t, c, i, t0)
		var last time.Time
		for k := 1; k <= touches; k++ {
			last = t0.Add(time.Duration(20+3*k+i) * time.Second)
			touch(t, c, clk, i, last)
		}
		count(last)
	}
	// Two stale entries due by now (at +61 s and +62 s), the document's
	// own not.
	insertAt(t, c, 50, t0)
	for _, s := range []int{1, 2, 30} {
		touch(t, c, clk, 50, t0.Add(time.Duration(s)*time.Second))
	}
	count(t0.Add(30 * time.Second))
	for i := range 5 {
		at := t0.Add(time.Duration(50+i*7) * time.Second)
		insertAt(t, c, 100+i, at)
		count(at)
	}
	clk.Set(now)
	p, err := readProfile(c, "t_1", now, 10*time.Second, len(want), true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Upcoming, want) || p.Overdue != 2 {
		t.Fatalf("upcoming %v, %d overdue; want %v and the 2 stale entries due", p.Upcoming, p.Overdue, want)
	}
}

// Next is the first document's own expiry, past touched documents' stale
// entries and the entries a deleted document left, whatever the horizon.
func TestProfileNextSkipsStaleEntries(t *testing.T) {
	c, clk := sessions(t)
	insertAt(t, c, 1, t0)
	for _, s := range []int{1, 2, 40} { // stale at +1 s and +2 s
		touch(t, c, clk, 1, t0.Add(time.Duration(s)*time.Second))
	}
	insertAt(t, c, 2, t0)
	for _, s := range []int{3, 4, 5} { // all left when 2 is deleted
		touch(t, c, clk, 2, t0.Add(time.Duration(s)*time.Second))
	}
	if _, err := c.Modify(2, docstore.WriteOptions{}, func(bson.D) (docstore.Change, error) {
		return docstore.Change{Kind: docstore.Remove}, nil
	}); err != nil {
		t.Fatal(err)
	}
	insertAt(t, c, 3, t0.Add(20*time.Second))
	now := t0.Add(30 * time.Second)
	for _, steps := range []int{0, 1, 60} {
		p, err := readProfile(c, "t_1", now, time.Minute, steps, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(80 * time.Second); !p.Next.Equal(want) {
			t.Fatalf("steps %d: next %v, want 3's own expiry %v", steps, p.Next, want)
		}
	}
}

// Past nextReads stale entries, Next is the entry where the reads
// stopped: a lower bound, for at most that many document reads a view.
func TestProfileNextReadsAreBounded(t *testing.T) {
	c, clk := sessions(t)
	for i := range nextReads + 6 {
		insertAt(t, c, i, t0)
		touch(t, c, clk, i, t0.Add(time.Second+time.Duration(i)*100*time.Millisecond)) // stale after the next
		touch(t, c, clk, i, t0.Add(50*time.Second))
	}
	insertAt(t, c, 1000, t0.Add(40*time.Second))
	p, err := readProfile(c, "t_1", t0.Add(30*time.Second), time.Minute, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(61*time.Second + (nextReads-1)*100*time.Millisecond); !p.Next.Equal(want) {
		t.Fatalf("next %v, want the %dth stale entry's expiry %v", p.Next, nextReads, want)
	}
}
