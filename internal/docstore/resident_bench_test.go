package docstore

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// residentSessions is the sessions' working set of BenchmarkSessionReads.
const residentSessions = 20000

// BenchmarkSessionReads times the session workload's two reads of the
// store, with the resident cache off and on: a find by token (the
// verify) and a touch (the token's candidate _id, then Modify setting
// lastAccess), over sessions {_id: ObjectId, token, user, lastAccess}
// with a unique token index and a TTL index on lastAccess. storage-
// reads/op counts the Gets and range reads that reached pebble, and
// cpu-ns/op the benchmark thread's CPU time.
func BenchmarkSessionReads(b *testing.B) {
	for _, cacheBytes := range []int64{0, 32 << 20} {
		name := map[bool]string{false: "cache=off", true: "cache=on"}[cacheBytes > 0]
		c, counted, cache, clk := sessionStore(b, cacheBytes)
		b.Run(name+"/find", func(b *testing.B) {
			benchSessionOp(b, counted, cache, func(i int) { findSession(b, c, i) })
		})
		b.Run(name+"/touch", func(b *testing.B) {
			benchSessionOp(b, counted, cache, func(i int) { touchSession(b, c, i, clk.Now()) })
		})
	}
}

func benchSessionOp(b *testing.B, counted *countingEngine, cache *rescache.Cache, op func(i int)) {
	for i := range residentSessions { // warm: every session read once
		op(i)
	}
	reads, hits := counted.reads.Load(), cacheHits(cache)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := reportThreadCPU(b) // ns/op is noise on a loaded machine
	for i := 0; i < b.N; i++ {
		op((i * 7919) % residentSessions)
	}
	cpu()
	b.StopTimer()
	pebbleReads := counted.reads.Load() - reads - (cacheHits(cache) - hits)
	b.ReportMetric(float64(pebbleReads)/float64(b.N), "storage-reads/op")
}

func cacheHits(c *rescache.Cache) int64 {
	if c == nil {
		return 0
	}
	return c.Stats().Hits
}

func sessionStore(b *testing.B, cacheBytes int64) (*Collection, *countingEngine, *rescache.Cache, *clock.Manual) {
	clk := clock.NewManual(t0)
	var cache *rescache.Cache
	if cacheBytes > 0 {
		cache = rescache.New(cacheBytes, clk)
	}
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Resident: cache})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	counted := &countingEngine{Engine: eng}
	s, err := Open(counted, Options{Clock: clk, Resident: cache})
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.CreateCollection("db", "sessions", CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}, {Key: "unique", Value: true}})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "lastAccess", Value: 1}}}, {Key: "name", Value: "lastAccess_1"}, {Key: "expireAfterSeconds", Value: 3600}})
	for i := range residentSessions {
		doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: sessionToken(i)}, {Key: "user", Value: int32(i)}, {Key: "lastAccess", Value: date(t0)}}
		if err := c.Insert(doc, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return c, counted, cache, clk
}

func sessionToken(i int) string { return fmt.Sprintf("%032d", i) }

func tokenFilter(tb testing.TB, i int) *query.Filter {
	f, err := query.NewFilter(bson.D{{Key: "token", Value: sessionToken(i)}})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func findSession(b *testing.B, c *Collection, i int) {
	f := tokenFilter(b, i)
	p, err := c.Plan(Query{Filter: f})
	if err != nil {
		b.Fatal(err)
	}
	it := c.Scan(p, f)
	defer it.Close()
	if _, ok, err := it.Next(); !ok || err != nil {
		b.Fatalf("session %d not found: %v", i, err)
	}
}

func touchSession(b *testing.B, c *Collection, i int, now time.Time) {
	f := tokenFilter(b, i)
	p, err := c.Plan(Query{Filter: f})
	if err != nil {
		b.Fatal(err)
	}
	ids, ok := c.CandidateIDs(p, f)
	if !ok {
		b.Fatal("no candidate _ids for a find by token")
	}
	defer ids.Close()
	id, ok, err := ids.Next()
	if !ok || err != nil {
		b.Fatalf("session %d not found: %v", i, err)
	}
	_, err = c.Modify(id, WriteOptions{}, func(doc bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bsonutil.WithField(doc, "lastAccess", date(now))}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// countingEngine counts the Gets and iterators the store opens.
type countingEngine struct {
	storage.Engine
	reads atomic.Int64
}

func (e *countingEngine) Get(key []byte) ([]byte, error) {
	e.reads.Add(1)
	return e.Engine.Get(key)
}

func (e *countingEngine) NewIter(lo, hi []byte) (storage.Iterator, error) {
	e.reads.Add(1)
	return e.Engine.NewIter(lo, hi)
}
