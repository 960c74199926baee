package docstore

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// BenchmarkApplyExpiries measures a replica set member's apply of compact
// expiries per document: sessions expiring in _id order, their TTL entry
// keys gathered by a primary's passes, then applied in entries of 16,000
// as every member applies a storm's grown batches. "flushed" has the
// documents in sstables, as a storm's are after their load; "memtable"
// leaves them in the memtable.
func BenchmarkApplyExpiries(b *testing.B) {
	b.Run("flushed", func(b *testing.B) { benchApplyExpiries(b, true) })
	b.Run("memtable", func(b *testing.B) { benchApplyExpiries(b, false) })
}

func benchApplyExpiries(b *testing.B, flush bool) {
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer base.Close()
	eng := &compactEngine{Engine: base, hold: true}
	clk := clock.NewManual(t0)
	s, err := Open(eng, Options{Clock: clk, Replicated: true})
	if err != nil {
		b.Fatal(err)
	}
	eng.store = s
	c, _ := s.CreateCollection("db", "s", CreateOptions{})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0}})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
	for i := range b.N {
		doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: fmt.Sprintf("tok%08d", i)}, {Key: "userID", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Microsecond))}}
		if err := c.Insert(doc, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	clk.Advance(time.Hour)
	pass := c.BeginExpiry("t_1", clk.Now())
	for {
		res, err := pass.Next(1000)
		if err != nil {
			b.Fatal(err)
		}
		if !res.More {
			break
		}
	}
	keys := eng.held
	if len(keys) != b.N {
		b.Fatalf("the passes gathered %d keys for %d documents", len(keys), b.N)
	}
	if flush {
		if err := base.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	defer reportThreadCPU(b)()
	for len(keys) > 0 {
		n := min(len(keys), 16000)
		nb := base.NewBatch()
		if err := eng.apply(nb, keys[:n], false); err != nil {
			b.Fatal(err)
		}
		nb.Close()
		keys = keys[n:]
	}
	b.StopTimer()
	if c.Count() != 0 {
		b.Fatalf("%d documents left", c.Count())
	}
}
