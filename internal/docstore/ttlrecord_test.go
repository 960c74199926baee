package docstore

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// passTotals runs a whole pass over t_1 and sums its batches.
func passTotals(t *testing.T, c *Collection, now time.Time) ExpireResult {
	t.Helper()
	pass := c.BeginExpiry("t_1", now)
	var sum ExpireResult
	for {
		res, err := pass.Next(2)
		if err != nil {
			t.Fatal(err)
		}
		sum.Deleted += res.Deleted
		sum.DeletedKeys += res.DeletedKeys
		sum.Read += res.Read
		if !res.More {
			return sum
		}
	}
}

// wantClean fails unless validate finds the collection consistent: every
// index entry matches a document, counters and deletion records agree.
func wantClean(t *testing.T, c *Collection) {
	t.Helper()
	if res := mustValidate(t, c); !res.Valid() {
		t.Fatalf("validate: %v", res.Errors)
	}
}

// ttlEntryOf returns the key and value of the t_1 entry of document id
// dated d.
func ttlEntryOf(t *testing.T, c *Collection, id any, d bson.DateTime) (key, value []byte) {
	t.Helper()
	ix := c.state.Load().ttl[0]
	key = entryKey(ix, keyenc.AppendKey(nil, []any{d}, ix.desc), keyenc.AppendValue(nil, id))
	value, err := c.store.eng.Get(key)
	if err != nil {
		t.Fatalf("entry of %v: %v", id, err)
	}
	return key, value
}

func TestExpiryDeletesByRecordWithoutReading(t *testing.T) {
	c := validColl(t) // four secondary indexes, multikey and partial ones among them
	key, value := ttlEntryOf(t, c, 0, date(t0))
	if id, rec, ok := ttlentry.Split(key, value); !ok || rec == nil || string(id) != string(keyenc.AppendValue(nil, 0)) {
		t.Fatalf("entry value %x: want the _id and a deletion record", value)
	}
	keysBefore := countKeys(t, c)
	res := passTotals(t, c, c.store.clock.Now().Add(3*time.Minute)) // _id 0, 1, 2 expire; 3 has no date
	if res.Deleted != 3 || res.Read != 0 {
		t.Fatalf("pass %+v: want 3 deleted, none read", res)
	}
	if got := keysBefore - countKeys(t, c); got != res.DeletedKeys-res.Deleted {
		t.Fatalf("%d index entries went, the pass reported %d", got, res.DeletedKeys-res.Deleted)
	}
	wantClean(t, c)
	if c.Count() != 3 {
		t.Fatalf("count %d, want 3", c.Count())
	}
}

// countKeys counts the secondary index entries of the collection.
func countKeys(t *testing.T, c *Collection) int {
	t.Helper()
	return countPrefix(t, c, collIndexPrefix(c.meta().ID))
}

// countPrefix counts the stored keys under prefix p.
func countPrefix(t *testing.T, c *Collection, p []byte) int {
	t.Helper()
	return storagetest.CountKeys(t, c.store.eng, p, prefixEnd(p))
}

func TestArrayOfDatesDeletedByRecord(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: bson.A{date(t0.Add(time.Hour)), date(t0), date(t0.Add(time.Minute))}}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: date(t0.Add(time.Hour))}})
	_, multi := ttlEntryOf(t, c, 1, date(t0))
	_, single := ttlEntryOf(t, c, 2, date(t0.Add(time.Hour)))
	if ttlentry.OnlyEntry(multi) || !ttlentry.OnlyEntry(single) {
		t.Fatalf("entry tags %#x and %#x: want the array's entries marked as several", multi[0], single[0])
	}
	wantClean(t, c)
	clk.Set(t0.Add(2 * time.Minute)) // two of the array's dates have passed
	res := wantPass(t, c, clk.Now(), 1, 0, 1)
	if res.DeletedKeys != 4 {
		t.Fatalf("pass %+v: want the document and its three dates deleted", res)
	}
}

// wantPass runs a pass at now and checks how many documents it deleted,
// how many of those it read, and how many index entries are left; then
// that validate finds the collection clean.
func wantPass(t *testing.T, c *Collection, now time.Time, deleted, read, entriesLeft int) ExpireResult {
	t.Helper()
	res := passTotals(t, c, now)
	if res.Deleted != deleted || res.Read != read {
		t.Fatalf("pass %+v: want %d deleted, %d of them read", res, deleted, read)
	}
	if n := countKeys(t, c); n != entriesLeft {
		t.Fatalf("%d index entries left, want %d", n, entriesLeft)
	}
	wantClean(t, c)
	return res
}

// Records written before an index was added do not list its keys: those
// documents are read, and their new entries go too.
func TestStaleRecordFallsBackToReading(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	for i := 0; i < 5; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "w", Value: i}, {Key: "t", Value: date(t0)}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: 9}, {Key: "t", Value: date(t0.Add(time.Hour))}})
	mustIndex(t, c, ixSpec("w_1", bson.D{{Key: "w", Value: 1}}))
	// One document written after the new index has a fresh record.
	insert(t, c, bson.D{{Key: "_id", Value: 5}, {Key: "w", Value: 5}, {Key: "t", Value: date(t0)}})
	clk.Set(t0.Add(time.Second))
	wantPass(t, c, clk.Now(), 6, 5, 2) // _id 9's two entries stay
}

// Passes run while clients write the same documents: an insert replacing
// an expired document, an update moving a date, a document growing. Each
// batch deletes what it read under its locks, so at the end every index
// entry, record and counter agrees with the documents, and nothing expired
// is left once a last pass has run.
func TestExpiryRacesWithWriters(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	mustIndex(t, c, ixSpec("k_1", bson.D{{Key: "k", Value: 1}}))
	clk.Set(t0)
	doc := func(id, n int) bson.D {
		at := t0.Add(time.Duration(n%3-1) * time.Second) // past, now or future
		return bson.D{{Key: "_id", Value: id}, {Key: "k", Value: n}, {Key: "t", Value: date(at)}, {Key: "pad", Value: strings.Repeat("x", n%50)}}
	}
	for i := 0; i < 200; i++ {
		insert(t, c, doc(i, i))
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < 1000; i++ {
				id, n := rng.IntN(200), rng.IntN(1000)
				old, err := c.Modify(id, WriteOptions{}, func(cur bson.D) (Change, error) {
					return Change{Kind: Replace, Doc: doc(id, n)}, nil
				})
				if err == nil && old == nil {
					err = c.Insert(doc(id, n), WriteOptions{}) // gone or expired: insert afresh
				}
				if e := mongoerr.As(err); err != nil && (e == nil || e.Code != mongoerr.DuplicateKey) {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	deleted := 0
	for done := false; !done; {
		select {
		case <-waitDone(&wg):
			done = true
		default:
		}
		deleted += passTotals(t, c, clk.Now()).Deleted
	}
	deleted += passTotals(t, c, clk.Now()).Deleted
	if deleted == 0 {
		t.Fatal("no pass deleted anything while the writers ran")
	}
	if stored, live := c.Count(), visible(t, c); stored != int64(live) {
		t.Fatalf("%d documents stored, %d visible: expired ones are left", stored, live)
	}
	wantClean(t, c)
}

// waitDone returns a channel closed once wg is done.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

func TestValidateFindsWrongDeletionRecord(t *testing.T) {
	c := validColl(t)
	key, value := ttlEntryOf(t, c, 1, date(t0.Add(time.Minute)))
	id, _, _ := ttlentry.Split(key, value)
	st := c.state.Load()
	secondary := st.indexes[1:]
	keys := make([][][]byte, len(secondary)) // a record without any key
	setKey(t, c, key, ttlentry.AppendRecord(nil, id, 10, secondary, indexID, keys))
	res := mustValidate(t, c)
	wantMessages(t, res.Errors, "index 't_1' has an entry whose deletion record does not match document 1")
}

func TestMalformedRecordsAreRejected(t *testing.T) {
	c := validColl(t)
	secondary := c.state.Load().indexes[1:]
	key, value := ttlEntryOf(t, c, 1, date(t0.Add(time.Minute)))
	_, rec, _ := ttlentry.Split(key, value)
	if _, ok := ttlentry.WalkRecord(rec, secondary, indexID, nil); !ok {
		t.Fatal("a good record is rejected")
	}
	for cut := 0; cut < len(rec); cut++ {
		if _, ok := ttlentry.WalkRecord(rec[:cut], secondary, indexID, nil); ok {
			t.Fatalf("a record cut at %d of %d bytes is accepted", cut, len(rec))
		}
	}
	if _, ok := ttlentry.WalkRecord(append(rec[:len(rec):len(rec)], 0), secondary, indexID, nil); ok {
		t.Fatal("a record with a trailing byte is accepted")
	}
	if _, _, ok := ttlentry.Split(key, []byte{ttlentry.RecordTag, 200}); ok {
		t.Fatal("a tagged value whose _id overruns it is accepted")
	}
}

func TestBatchReportsScatteredDocuments(t *testing.T) {
	for _, tc := range []struct {
		name      string
		id        func(i int) int
		scattered bool
	}{
		{"in order", func(i int) int { return i }, false},
		{"random", func(i int) int { return (i * 37) % 100 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := ttlColl(t, "t", 0)
			for i := 0; i < 100; i++ {
				insert(t, c, bson.D{{Key: "_id", Value: tc.id(i)}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Millisecond))}})
			}
			clk.Set(t0.Add(time.Second))
			pass := c.BeginExpiry("t_1", clk.Now())
			first, err := pass.Next(40)
			if err != nil || first.Scattered {
				t.Fatalf("first batch %+v (%v): nothing to compare with yet", first, err)
			}
			second, err := pass.Next(40)
			if err != nil || second.Deleted != 40 || second.Scattered != tc.scattered {
				t.Fatalf("second batch %+v (%v): want 40 deleted, scattered %v", second, err, tc.scattered)
			}
		})
	}
}

// TestTTLEntryValueSizeIsExact: the size a write's arena gives the record
// is the record's length, for lengths whose varints take one byte or more.
func TestTTLEntryValueSizeIsExact(t *testing.T) {
	indexes := []*indexState{{def: &catalog.Index{ID: 1}}, {def: &catalog.Index{ID: 300}}}
	for _, n := range []int{0, 1, 127, 128, 20000} {
		id := make([]byte, n%200)
		keys := [][][]byte{{make([]byte, n)}, {make([]byte, 9), make([]byte, 130)}}
		v := ttlentry.AppendRecord(nil, id, n*1000, indexes, indexID, keys)
		if got := ttlentry.RecordSize(id, n*1000, indexes, indexID, keys); got != len(v) {
			t.Errorf("n=%d: size %d, record %d bytes", n, got, len(v))
		}
	}
}
