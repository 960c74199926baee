package commands

import (
	"container/list"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
)

// BenchmarkLRUCache is a cache of 100 000 keys read with Zipf popularity
// (s = 1.1) through a collection bounded by lruLimit {documents: 10 000}
// with refreshOnRead on the same index (expireAfterSeconds 3600, so a
// read refreshes a page last used more than 6 minutes before); the clock
// moves 10 ms per request. A request is a find by _id, then an insert on
// a miss. It reports the hit ratio beside an exact LRU of the same size
// fed the same keys, and fails if the collection ever holds more than the
// limit.
func BenchmarkLRUCache(b *testing.B) {
	const keys, limit = 100000, 10000
	clk := clock.NewManual(refreshT0)
	h, _ := newClockedHandler(b, clk)
	benchRun(b, h, bson.D{{Key: "createIndexes", Value: "cache"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "name", Value: "lru"},
		{Key: "expireAfterSeconds", Value: 3600}, {Key: "refreshOnRead", Value: true},
		{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: limit}}}}}}})
	coll := h.deps.Store.Collection("test", "cache")
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, keys-1)
	exact := newExactLRU(limit)
	hits, exactHits := 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.Advance(10 * time.Millisecond)
		k := int64(zipf.Uint64())
		if exact.touch(k) {
			exactHits++
		}
		out, err := call0(h, bson.D{{Key: "find", Value: "cache"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: k}}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}})
		if err != nil {
			b.Fatal(err)
		}
		if len(firstBatchOf(out)) == 1 {
			hits++
			continue
		}
		benchRun(b, h, bson.D{{Key: "insert", Value: "cache"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: k}, {Key: "usedAt", Value: bson.NewDateTimeFromTime(clk.Now())}, {Key: "body", Value: "page"}}}}})
		if n := coll.Count(); n > limit {
			b.Fatalf("the cache holds %d documents, limit %d", n, limit)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(hits)/float64(b.N), "hit-ratio")
	b.ReportMetric(float64(exactHits)/float64(b.N), "exact-lru-hit-ratio")
	b.ReportMetric(float64(h.deps.Store.LRUEvicted())/float64(b.N), "evictions/op")
}

func call0(h *Handler, body bson.D) (bson.D, error) {
	return h.table[body[0].Key].run(h, &request{ctx: refreshCtx, db: "test", name: body[0].Key, body: body})
}

func firstBatchOf(reply bson.D) bson.A {
	cur, _ := bsonutil.Field(reply, "cursor")
	batch, _ := bsonutil.Field(cur.(bson.D), "firstBatch")
	return batch.(bson.A)
}

// exactLRU is a least-recently-used set of keys, for comparison.
type exactLRU struct {
	limit int
	order *list.List // front: most recent
	at    map[int64]*list.Element
}

func newExactLRU(limit int) *exactLRU {
	return &exactLRU{limit: limit, order: list.New(), at: map[int64]*list.Element{}}
}

// touch reads k, inserting it on a miss; it reports a hit.
func (l *exactLRU) touch(k int64) bool {
	if e, ok := l.at[k]; ok {
		l.order.MoveToFront(e)
		return true
	}
	l.at[k] = l.order.PushFront(k)
	if l.order.Len() > l.limit {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.at, last.Value.(int64))
	}
	return false
}
