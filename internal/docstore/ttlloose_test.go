package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// touchedColl is a collection with a token index and t_1, a TTL index of
// expireAfterSeconds secs, over a change log whose events events lists.
func touchedColl(t *testing.T, secs int) (*Collection, *clock.Manual, func() []changestream.Record) {
	t.Helper()
	s, events := loggedStore(t)
	c, err := s.CreateCollection("db", "s", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: secs}})
	events()
	return c, s.clock.(*clock.Manual), events
}

// writeField writes doc id's field to v (removes it when v is nil), as an
// update would.
func writeField(t *testing.T, c *Collection, id any, field string, v any) {
	t.Helper()
	_, err := c.Modify(id, WriteOptions{}, func(doc bson.D) (Change, error) {
		if doc == nil {
			return Change{}, errors.New("no document")
		}
		next := slices.DeleteFunc(slices.Clone(doc), func(e bson.E) bool { return e.Key == field })
		if v != nil {
			next = append(next, bson.E{Key: field, Value: v})
		}
		return Change{Kind: Replace, Doc: next}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ttlEntries counts the entries of t_1.
func ttlEntries(t *testing.T, c *Collection) int {
	t.Helper()
	return countPrefix(t, c, c.state.Load().ttlIndex("t_1").prefix)
}

// fullPass runs a whole pass over t_1 at now and sums its batches.
func fullPass(t *testing.T, c *Collection, now time.Time) ExpireResult {
	t.Helper()
	pass := c.BeginExpiry("t_1", now)
	var sum ExpireResult
	for range 1000 {
		res, err := pass.Next(2)
		if err != nil {
			t.Fatal(err)
		}
		sum.Deleted += res.Deleted
		sum.Read += res.Read
		sum.StaleEntries += res.StaleEntries
		if !res.More {
			return sum
		}
	}
	t.Fatal("the pass did not end")
	return sum
}

// A touched session's old entries stay until the monitor reaches them,
// which then deletes them alone, silently, and the document only at its
// own date; reads go by the document's date throughout.
func TestTouchLeavesEntriesTheMonitorJudges(t *testing.T) {
	c, clk, events := touchedColl(t, 60)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	for _, s := range []int{10, 20, 30} {
		writeField(t, c, 1, "t", date(t0.Add(time.Duration(s)*time.Second)))
	}
	if n := ttlEntries(t, c); n != 3 {
		t.Fatalf("t_1 holds %d entries, want 3: the insert's entry deleted by the first touch, each touch's left", n)
	}
	wantClean(t, c)
	events()

	clk.Set(t0.Add(85 * time.Second)) // the entries at +10 s and +20 s are due, the document's +30 s is not
	if n := visible(t, c); n != 1 {
		t.Fatalf("%d documents visible, want the live session", n)
	}
	res := fullPass(t, c, clk.Now())
	if res.Deleted != 0 || res.StaleEntries != 2 || ttlEntries(t, c) != 1 {
		t.Fatalf("pass %+v, %d entries left: want the two stale entries gone, the document kept", res, ttlEntries(t, c))
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("removing stale entries wrote %d change events, want none", len(evs))
	}
	wantClean(t, c)

	clk.Set(t0.Add(90 * time.Second))
	if n := visible(t, c); n != 0 {
		t.Fatalf("%d documents visible at the session's expiry, want none", n)
	}
	res = fullPass(t, c, clk.Now())
	evs := events()
	if res.Deleted != 1 || ttlEntries(t, c) != 0 || len(evs) != 1 || evs[0].Event.Op != changestream.OpDelete || evs[0].Event.Expired == nil {
		t.Fatalf("pass %+v, %d entries, events %+v: want the session expired with one delete event", res, ttlEntries(t, c), evs)
	}
	wantClean(t, c)
}

// A touch costs the document, its new entry and its change event: the
// old entry is left, except the first touch's, which carried a deletion
// record the monitor would trust.
func TestTouchWritesOneEntry(t *testing.T) {
	s, w := openCountingStore(t, true)
	c, err := s.CreateCollection("db", "s", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 3600}})
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: date(t0)}})
	for i, want := range []int64{4, 3, 3, 3} {
		w.reset()
		writeField(t, c, 1, "t", date(t0.Add(time.Duration(i+1)*time.Second)))
		if got := w.records.Load(); got != want {
			t.Fatalf("touch %d wrote %d records, want %d", i+1, got, want)
		}
	}
}

// Every write of a touched document other than a later date deletes the
// stale entries its entry lists, and leaves the index exactly the
// document's entries; a delete leaves them to the monitor, which removes
// them without an event.
func TestOtherWritesRemoveStaleEntries(t *testing.T) {
	later := date(t0.Add(time.Hour))
	cases := []struct {
		name   string
		change func(t *testing.T, c *Collection)
		want   int // entries of the document in t_1 after the change
	}{
		{"earlier date", func(t *testing.T, c *Collection) { writeField(t, c, 1, "t", date(t0.Add(-time.Minute))) }, 1},
		{"same date", func(t *testing.T, c *Collection) { writeField(t, c, 1, "token", "b") }, 1},
		{"field removed", func(t *testing.T, c *Collection) { writeField(t, c, 1, "t", nil) }, 1}, // indexed as null
		{"not a date", func(t *testing.T, c *Collection) { writeField(t, c, 1, "t", "never") }, 1},
		{"array of dates", func(t *testing.T, c *Collection) { writeField(t, c, 1, "t", bson.A{later, date(t0)}) }, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := touchedColl(t, 60)
			insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
			writeField(t, c, 1, "t", date(t0.Add(10*time.Second)))
			writeField(t, c, 1, "t", date(t0.Add(20*time.Second)))
			writeField(t, c, 1, "t", date(t0.Add(30*time.Second)))
			tc.change(t, c)
			if n := ttlEntries(t, c); n != tc.want {
				t.Fatalf("t_1 holds %d entries, want %d", n, tc.want)
			}
			wantClean(t, c)
		})
	}
	t.Run("delete", func(t *testing.T) {
		c, _, events := touchedColl(t, 60)
		insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
		writeField(t, c, 1, "t", date(t0.Add(10*time.Second)))
		writeField(t, c, 1, "t", date(t0.Add(20*time.Second)))
		if _, err := c.Modify(1, WriteOptions{}, func(bson.D) (Change, error) { return Change{Kind: Remove}, nil }); err != nil {
			t.Fatal(err)
		}
		wantClean(t, c)
		events()
		res := fullPass(t, c, t0.Add(time.Hour))
		if res.Deleted != 0 || res.StaleEntries != 1 || ttlEntries(t, c) != 0 || len(events()) != 0 {
			t.Fatalf("pass %+v: want the deleted document's stale entry gone, silently", res)
		}
	})
}

// A document touched without pause keeps at most maxStaleEntries stale
// entries that are not yet due.
func TestStaleEntriesAreCapped(t *testing.T) {
	c, clk, _ := touchedColl(t, 3600)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	for i := 1; i <= 3*maxStaleEntries; i++ {
		clk.Set(t0.Add(time.Duration(i) * time.Second))
		writeField(t, c, 1, "t", date(clk.Now()))
		if n := ttlEntries(t, c); n > maxStaleEntries+1 {
			t.Fatalf("after touch %d t_1 holds %d entries, want at most %d", i, n, maxStaleEntries+1)
		}
	}
	if n := ttlEntries(t, c); n != maxStaleEntries+1 {
		t.Fatalf("t_1 holds %d entries, want %d", n, maxStaleEntries+1)
	}
	// The entries kept are the first touches' and the document's own: a
	// capped touch deletes the entry it would leave, beside its own, not
	// an old one among other documents' entries.
	if got, want := ttlEntryDates(t, c), capKeptDates(); !slices.Equal(got, want) {
		t.Fatalf("t_1 holds the dates %v, want %v", got, want)
	}
	wantClean(t, c)
}

// capKeptDates are the entries' dates (seconds after t0) a document
// inserted at t0 and touched at each second up to 3*maxStaleEntries keeps:
// the first touch deletes the insert's entry (it has a record), the next
// ten leave theirs, and every later one deletes the one it would leave.
func capKeptDates() []int64 {
	var want []int64
	for i := 1; i <= maxStaleEntries; i++ {
		want = append(want, int64(i))
	}
	return append(want, 3*maxStaleEntries)
}

// ttlEntryDates are the dates of t_1's entries, in seconds after t0.
func ttlEntryDates(t *testing.T, c *Collection) []int64 {
	t.Helper()
	ix := c.state.Load().ttlIndex("t_1")
	it, err := c.store.eng.NewIter(ix.prefix, prefixEnd(ix.prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []int64
	for ok := it.First(); ok; ok = it.Next() {
		n, ok := valuesLen(it.Key(), len(ix.prefix), ix.desc)
		if !ok {
			t.Fatalf("entry %x: no date", it.Key())
		}
		d, ok := ix.keyDate(it.Key()[len(ix.prefix):n])
		if !ok {
			t.Fatalf("entry %x: no date", it.Key())
		}
		out = append(out, (int64(d)-t0.UnixMilli())/1000)
	}
	return out
}

// Every reader of index entries passes over a stale entry: a range scan
// (which would match on the stale date, or yield the document out of
// order), the candidate _ids of a covered write, the walk of TTL entries
// the metrics' forecast reads, a unique check and the duplicate search of an index made
// unique after the touches, and the walk of an lruLimit given to the index
// after them.
func TestIndexReadersSkipStaleEntries(t *testing.T) {
	c, _, _ := touchedColl(t, 3600)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "token", Value: "b"}, {Key: "t", Value: date(t0.Add(5 * time.Second))}})
	for _, s := range []int{1, 5, 10} { // stale entries of 1 at +1 s and at +5 s, beside 2's own
		writeField(t, c, 1, "t", date(t0.Add(time.Duration(s)*time.Second)))
	}
	inRange := bson.D{{Key: "t", Value: bson.D{{Key: "$lt", Value: date(t0.Add(8 * time.Second))}}}}
	all := bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: date(t0)}}}}

	t.Run("scan", func(t *testing.T) {
		if ids := scanIDs(t, c, inRange, nil); !slices.Equal(ids, []int32{2}) {
			t.Fatalf("range below +8 s gave %v, want [2]", ids)
		}
		if ids := scanIDs(t, c, all, bson.D{{Key: "t", Value: 1}}); !slices.Equal(ids, []int32{2, 1}) {
			t.Fatalf("sorted by t: %v, want [2 1]", ids)
		}
	})
	t.Run("candidates", func(t *testing.T) {
		if ids := candidateIDs(t, c, inRange); !slices.Equal(ids, []string{"2"}) {
			t.Fatalf("candidates below +8 s: %v, want [2]", ids)
		}
	})
	t.Run("entries", func(t *testing.T) {
		// The walk that expirywatch's forecast reads: 1's entries at +1 s
		// and +5 s are stale, 2's at +5 s and 1's at +10 s are not; the
		// entry at +10 s lists +5 s last.
		e, err := c.TTLEntries("t_1")
		if err != nil || e == nil {
			t.Fatalf("TTLEntries: %v, %v", e, err)
		}
		var stale []bool
		var listed []int64
		for e.Next() {
			at, ok := e.Expiry()
			if !ok {
				break
			}
			s, err := e.Stale()
			if err != nil {
				t.Fatal(err)
			}
			stale = append(stale, s)
			if was, ok := e.ListedExpiry(); ok {
				listed = append(listed, int64(at.Sub(was)/time.Second))
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(stale, []bool{true, true, false, false}) && !slices.Equal(stale, []bool{true, false, true, false}) {
			t.Fatalf("stale %v: want the two entries of 1 before +10 s stale", stale)
		}
		if !slices.Equal(listed, []int64{4, 5}) {
			t.Fatalf("entries listing a stale one, seconds back to it: %v; want [4 5] (+5 s lists +1 s, +10 s lists +5 s)", listed)
		}
	})
	t.Run("unique", func(t *testing.T) {
		if err := c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.PrepareUnique = true; return nil }); err != nil {
			t.Fatal(err)
		}
		dups, err := c.indexDuplicates(context.Background(), c.state.Load().ttlIndex("t_1"))
		if err != nil || len(dups) != 0 {
			t.Fatalf("duplicates %v %v: want none", dups, err)
		}
		// Document 1's stale entry holds +1 s: a new document may take it.
		insert(t, c, bson.D{{Key: "_id", Value: 3}, {Key: "token", Value: "c"}, {Key: "t", Value: date(t0.Add(time.Second))}})
		d, _ := PrepareInsert(bson.D{{Key: "_id", Value: 4}, {Key: "token", Value: "d"}, {Key: "t", Value: date(t0.Add(10 * time.Second))}})
		if err := c.Insert(d, WriteOptions{}); mongoerr.As(err).Code != mongoerr.DuplicateKey {
			t.Fatalf("a live document's own date: %v, want a duplicate key", err)
		}
		wantClean(t, c)
	})
	t.Run("lru", func(t *testing.T) {
		err := c.ModifyIndex("t_1", func(ix *catalog.Index) error {
			ix.PrepareUnique, ix.LRUDocs = false, 2
			return nil
		})
		if err == nil {
			err = c.EvictToLRULimits()
		}
		if err != nil {
			t.Fatal(err)
		}
		// 1's stale entry at +1 s sorts before 3's own there.
		if ids := scanIDs(t, c, all, bson.D{{Key: "t", Value: 1}}); !slices.Equal(ids, []int32{2, 1}) {
			t.Fatalf("left %v: want the two most recent of 1 (+10 s), 2 (+5 s) and 3 (+1 s)", ids)
		}
		wantClean(t, c)
	})
}

func scanIDs(t *testing.T, c *Collection, filter, sort bson.D) []int32 {
	t.Helper()
	f, err := query.NewFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.Plan(Query{Filter: f, Sort: sort, Hint: "t_1"})
	if err != nil || plan.Kind != IndexScan || (sort != nil && !plan.SortProvided) {
		t.Fatalf("plan %+v %v: want a scan of t_1 giving the sort", plan, err)
	}
	it := c.Scan(plan, f)
	defer it.Close()
	var ids []int32
	for {
		doc, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, doc[0].Value.(int32))
	}
}

func candidateIDs(t *testing.T, c *Collection, filter bson.D) []string {
	t.Helper()
	f, err := query.NewFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.Plan(Query{Filter: f, Hint: "t_1"})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.CandidateIDs(plan, f)
	if !ok {
		t.Fatalf("plan %+v gives no candidates", plan)
	}
	defer it.Close()
	var ids []string
	for {
		id, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, fmt.Sprint(id))
	}
}

// appendLooseFullValue is a loose value as stores wrote it before
// ttlentry.RecordTagLoose: the _id repeated, every date whole.
func appendLooseFullValue(dst, idEnc []byte, stale []int64) []byte {
	dst = append(dst, ttlentry.RecordTagLooseFull)
	dst = binary.AppendUvarint(dst, uint64(len(idEnc)))
	dst = append(dst, idEnc...)
	dst = binary.AppendUvarint(dst, uint64(len(stale)))
	for _, d := range stale {
		dst = binary.AppendVarint(dst, d)
	}
	return dst
}

// Both loose formats give back the _id (the key's tail) and the dates,
// whatever their order; a cut or extended value is refused, and the
// current format is smaller by the _id and the dates' repeated high
// bytes.
func TestLooseValuesRoundTrip(t *testing.T) {
	id := keyenc.AppendValue(nil, bson.NewObjectIDFromTimestamp(t0))
	key := append([]byte("prefix-and-date"), id...)
	ms := t0.UnixMilli()
	lists := map[string][]int64{
		"none":            nil,
		"one":             {ms},
		"touched":         {ms, ms + 7_000, ms + 14_100, ms + 21_000},
		"out of order":    {ms, ms - 90_000, ms + 1},
		"before 1970":     {-5_000, -1, 0, 3},
		"far apart":       {math.MinInt64 / 2, 0, math.MaxInt64 / 2},
		"maxStaleEntries": slices.Repeat([]int64{ms}, maxStaleEntries),
	}
	for name, stale := range lists {
		t.Run(name, func(t *testing.T) {
			for _, format := range []struct {
				name  string
				value []byte
			}{
				{"current", ttlentry.AppendLoose(nil, id, stale, false)},
				{"log", ttlentry.AppendLoose(nil, id, stale, true)},
				{"full", appendLooseFullValue(nil, id, stale)},
			} {
				gotID, got, ok := ttlentry.SplitLoose(key, format.value)
				if !ok || !bytes.Equal(gotID, id) || !slices.Equal(got, stale) {
					t.Fatalf("%s: got %x %v %v, want %x %v", format.name, gotID, got, ok, id, stale)
				}
				if eid := ttlentry.ID(key, format.value); !bytes.Equal(eid, id) {
					t.Fatalf("%s: ttlentry.ID %x, want %x", format.name, eid, id)
				}
				for cut := 1; cut < len(format.value); cut++ {
					if _, _, ok := ttlentry.SplitLoose(key, format.value[:cut]); ok {
						t.Fatalf("%s: a value cut at %d of %d is accepted", format.name, cut, len(format.value))
					}
				}
				if _, _, ok := ttlentry.SplitLoose(key, append(slices.Clone(format.value), 0)); ok {
					t.Fatalf("%s: a value with a trailing byte is accepted", format.name)
				}
			}
		})
	}
	if _, _, ok := ttlentry.SplitLoose(id[:2], ttlentry.AppendLoose(nil, id, nil, false)); ok {
		t.Fatal("an _id longer than its key is accepted")
	}
	touched := lists["touched"]
	if n, full := len(ttlentry.AppendLoose(nil, id, touched, false)), len(appendLooseFullValue(nil, id, touched)); n > 1+1+1+6+3*2 || n >= full-len(id) {
		t.Fatalf("a touched session's value is %d bytes (%d before): want at most 15", n, full)
	}
}

// A store written before keeps working: a document whose newest entry is
// in the full format is touched on, capped, and cleaned by a write that
// is not a touch, its older stale entries included.
func TestFullLooseEntriesAreReadOn(t *testing.T) {
	c, clk, _ := touchedColl(t, 3600)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	for i := 1; i <= 4; i++ {
		writeField(t, c, 1, "t", date(t0.Add(time.Duration(i)*time.Second)))
	}
	key, value := ttlEntryOf(t, c, 1, date(t0.Add(4*time.Second)))
	id, stale, ok := ttlentry.SplitLoose(key, value)
	if !ok || len(stale) != 3 {
		t.Fatalf("newest entry %x: want a loose value listing 3 stale dates", value)
	}
	setKey(t, c, key, appendLooseFullValue(nil, id, stale))
	wantClean(t, c)
	for i := 5; i <= 2*maxStaleEntries; i++ {
		clk.Set(t0.Add(time.Duration(i) * time.Second))
		writeField(t, c, 1, "t", date(clk.Now()))
		if n := ttlEntries(t, c); n > maxStaleEntries+1 {
			t.Fatalf("after touch %d t_1 holds %d entries, want at most %d", i, n, maxStaleEntries+1)
		}
	}
	wantClean(t, c)
	writeField(t, c, 1, "t", date(t0.Add(-time.Minute)))
	if n := ttlEntries(t, c); n != 1 {
		t.Fatalf("t_1 holds %d entries after an earlier date, want the document's one", n)
	}
	wantClean(t, c)
}
