package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) (*Store, *clock.Manual) { return openStoreTB(t) }

func openStoreTB(t testing.TB) (*Store, *clock.Manual) {
	t.Helper()
	return openStoreLog(t, true)
}

// openStoreLog opens a store through the change log engine, its log on
// when logged, off (as a standalone before its first stream) when not:
// benchmarks measure the log's cost as the difference.
func openStoreLog(t testing.TB, logged bool) (*Store, *clock.Manual) {
	t.Helper()
	return openStoreCache(t, logged, testCacheBytes)
}

// testCacheBytes is the resident cache of the tests' stores: every test
// of the package reads through it, as the server does.
const testCacheBytes = 8 << 20

// openStoreCache is openStoreLog with a resident cache of cacheBytes (0:
// none).
func openStoreCache(t testing.TB, logged bool, cacheBytes int64) (*Store, *clock.Manual) {
	t.Helper()
	return openStoreOn(t, logged, cacheBytes, func(e storage.Engine) storage.Engine { return e })
}

// openStoreOn is openStoreCache over the engine wrap makes of pebble's.
func openStoreOn(t testing.TB, logged bool, cacheBytes int64, wrap func(storage.Engine) storage.Engine) (*Store, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(t0)
	var resident *rescache.Cache
	if cacheBytes > 0 {
		resident = rescache.New(cacheBytes, clk)
	}
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Resident: resident})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	// Through the change log engine, as a standalone server runs, so every
	// test and benchmark pays for (and checks) the change events.
	wrapped, err := changestream.NewEngine(wrap(eng), clk, changestream.NewSignal())
	if err == nil && logged {
		err = wrapped.Record()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(wrapped, Options{Clock: clk, Resident: resident})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func mustIndex(t *testing.T, c *Collection, spec bson.D) { mustIndexTB(t, c, spec) }

func mustIndexTB(t testing.TB, c *Collection, spec bson.D) {
	t.Helper()
	ix, err := catalog.ParseIndexSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		t.Fatal(err)
	}
}

func ttlColl(t *testing.T, field string, secs int) (*Collection, *clock.Manual) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: field, Value: 1}}}, {Key: "name", Value: field + "_1"}, {Key: "expireAfterSeconds", Value: secs}})
	return c, clk
}

func insert(t *testing.T, c *Collection, doc bson.D) {
	t.Helper()
	d, err := PrepareInsert(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(d, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func visible(t *testing.T, c *Collection) int {
	t.Helper()
	return countMatching(t, c, nil)
}

func date(tm time.Time) bson.DateTime { return bson.NewDateTimeFromTime(tm) }

func TestExpiryRules(t *testing.T) {
	c, _ := ttlColl(t, "t", 60)
	cases := []struct {
		name    string
		value   any
		expired bool
	}{
		{"date older than expireAfterSeconds", date(t0.Add(-61 * time.Second)), true},
		{"boundary is inclusive", date(t0.Add(-60 * time.Second)), true},
		{"date within the window", date(t0.Add(-59 * time.Second)), false},
		{"future date", date(t0.Add(time.Hour)), false},
		{"before 1970", date(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)), true},
		{"array: earliest date governs", bson.A{date(t0.Add(time.Hour)), date(t0.Add(-time.Hour))}, true},
		{"array without dates", bson.A{"x", int32(1)}, false},
		{"string", "2012-08-02T17:47:15Z", false},
		{"number", int64(0), false},
		{"null", nil, false},
		{"ObjectId", bson.NewObjectIDFromTimestamp(t0.Add(-time.Hour)), false},
		{"timestamp", bson.Timestamp{T: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: tc.value}}
			if got := c.Expired(doc, t0); got != tc.expired {
				t.Fatalf("Expired = %v, want %v", got, tc.expired)
			}
		})
	}
	if c.Expired(bson.D{{Key: "_id", Value: 1}}, t0) {
		t.Fatal("a missing field never expires")
	}
}

func TestPartialTTLOnlyExpiresMatching(t *testing.T) {
	s, _ := openStore(t)
	c, _ := s.CreateCollection("db", "p", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0},
		{Key: "partialFilterExpression", Value: bson.D{{Key: "kind", Value: "draft"}}}})
	old := date(t0.Add(-time.Hour))
	if !c.Expired(bson.D{{Key: "kind", Value: "draft"}, {Key: "t", Value: old}}, t0) {
		t.Fatal("matching document should expire")
	}
	if c.Expired(bson.D{{Key: "kind", Value: "comment"}, {Key: "t", Value: old}}, t0) {
		t.Fatal("document outside the partial filter must not expire")
	}
}

func TestExpiredDocumentsInvisibleAndReplaceable(t *testing.T) {
	c, clk := ttlColl(t, "t", 10)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: date(t0)}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: date(t0.Add(time.Minute))}})
	if n := visible(t, c); n != 2 {
		t.Fatalf("visible before expiry: %d", n)
	}
	clk.Advance(10 * time.Second)
	if n := visible(t, c); n != 1 {
		t.Fatalf("visible after expiry: %d", n)
	}
	// An insert that meets an expired document with the same _id replaces it.
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: date(clk.Now())}})
	if n := visible(t, c); n != 2 {
		t.Fatalf("after re-insert: %d", n)
	}
	// Modify never hands an expired document to its callback.
	clk.Advance(time.Hour)
	_, err := c.Modify(2, WriteOptions{}, func(doc bson.D) (Change, error) {
		if doc != nil {
			t.Fatalf("Modify saw expired document %v", doc)
		}
		return Change{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUniqueIndexTreatsExpiredHolderAsGone(t *testing.T) {
	c, clk := ttlColl(t, "t", 10)
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}, {Key: "unique", Value: true}})
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	d, _ := PrepareInsert(bson.D{{Key: "_id", Value: 2}, {Key: "token", Value: "a"}, {Key: "t", Value: date(t0)}})
	err := c.Insert(d, WriteOptions{})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.DuplicateKey {
		t.Fatalf("live duplicate: %v", err)
	}
	clk.Advance(11 * time.Second)
	if err := c.Insert(d, WriteOptions{}); err != nil {
		t.Fatalf("expired holder should be replaced: %v", err)
	}
	if c.Count() != 1 {
		t.Fatalf("the expired holder is deleted in the same batch: count %d", c.Count())
	}
}

func TestNextExpiryAndExpireBatch(t *testing.T) {
	c, clk := ttlColl(t, "t", 30)
	if _, ok, _ := c.NextExpiry(); ok {
		t.Fatal("empty collection has no next expiry")
	}
	for i := 0; i < 25; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: 100}, {Key: "t", Value: "never"}})
	at, ok, err := c.NextExpiry()
	if err != nil || !ok || !at.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("next expiry %v %v %v", at, ok, err)
	}
	clk.Set(t0.Add(30*time.Second + 9*time.Second)) // documents 0..9 expired
	pass := c.BeginExpiry("t_1", clk.Now())
	res, err := pass.Next(4)
	if err != nil || res.Deleted != 4 || !res.More || res.DeletedKeys != 8 {
		t.Fatalf("first batch: %+v %v", res, err)
	}
	res, err = pass.Next(100)
	if err != nil || res.Deleted != 6 || res.More {
		t.Fatalf("second batch: %+v %v", res, err)
	}
	if c.Count() != 16 {
		t.Fatalf("left: %d", c.Count())
	}
	at, _, _ = c.NextExpiry()
	if !at.Equal(t0.Add(40 * time.Second)) {
		t.Fatalf("next expiry after deletion: %v", at)
	}
}

func TestIndexScanPlanAndDuplicateMultikey(t *testing.T) {
	s, _ := openStore(t)
	c, _ := s.CreateCollection("db", "m", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags_1"}})
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"a", "b", "a"}}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "tags", Value: "b"}})
	insert(t, c, bson.D{{Key: "_id", Value: 3}})
	f, err := query.NewFilter(bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"a", "b"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.PlanQuery(f, nil)
	if err != nil || plan.Kind != IndexScan {
		t.Fatalf("plan %+v %v", plan, err)
	}
	it := c.Scan(plan, f)
	defer it.Close()
	n := 0
	for {
		_, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if n != 2 || it.Stats.KeysExamined != 3 || it.Stats.DocsExamined != 2 {
		t.Fatalf("returned %d, stats %+v", n, it.Stats)
	}
}

func TestCappedCollectionEvictsOldest(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "capped", CreateOptions{Capped: true, CappedSize: 1 << 20, CappedMax: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}})
	}
	if c.Count() != 3 {
		t.Fatalf("count %d, want max 3", c.Count())
	}
	it := c.Scan(nil, nil)
	defer it.Close()
	first, _, _ := it.Next()
	if first[0].Value != int32(3) {
		t.Fatalf("oldest kept document is %v, want _id 3", first)
	}
	small, _ := s.CreateCollection("db", "bytes", CreateOptions{Capped: true, CappedSize: 100})
	for i := 0; i < 10; i++ {
		insert(t, small, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}})
	}
	if small.DataSize() > 100 || small.Count() == 0 {
		t.Fatalf("size-capped: %d bytes in %d documents", small.DataSize(), small.Count())
	}
}

// TestCreateWithIndexesInOneCatalogEntry: indexes made with the
// collection are in its first catalog entry, ready, and expire at once.
func TestCreateWithIndexesInOneCatalogEntry(t *testing.T) {
	s, clk := openStore(t)
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "ts", Value: 1}}}, {Key: "name", Value: "ts_1"}, {Key: "expireAfterSeconds", Value: 60}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection("db", "m", CreateOptions{Indexes: []*catalog.Index{ix}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.eng.Get(catalogKey("db", "m"))
	if err != nil {
		t.Fatal(err)
	}
	var stored catalog.Collection
	if err := bson.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Indexes) != 2 || !stored.Indexes[1].Ready || stored.Indexes[1].Name != "ts_1" || stored.NextIndexID != 2 {
		t.Fatalf("first catalog entry: %+v", stored.Indexes)
	}
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: date(t0)}})
	clk.Set(t0.Add(time.Minute))
	if n := visible(t, c); n != 0 {
		t.Fatalf("%d visible after expiry", n)
	}
}
