package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expirywatch"
	"github.com/mayflydb/mayfly/internal/opstats"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// Describe names every metric Collect can send, and reads no source to
// do it: a Collect at registration read every TTL index's hour ahead.
func TestDescribeMatchesCollectWithoutReading(t *testing.T) {
	unread := func() { t.Error("Describe read a source") }
	described := map[*prometheus.Desc]bool{}
	c := newCollector(Sources{
		Ops:       opstats.New(),
		Server:    func() server.Stats { unread(); return server.Stats{} },
		Storage:   func() storage.Metrics { unread(); return storage.Metrics{} },
		TTLPasses: func() int64 { unread(); return 0 },
	})
	for d := range describe(c) {
		described[d] = true
	}

	c.src = fullSources(t)
	collected := map[*prometheus.Desc]bool{}
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		if !described[m.Desc()] {
			t.Errorf("collected %v, not described", m.Desc())
		}
		collected[m.Desc()] = true
	}
	for d := range described {
		if !collected[d] {
			t.Errorf("described %v, never collected", d)
		}
	}
}

func describe(c *collector) <-chan *prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	return ch
}

// fullSources give every metric a value: a command run, and a TTL index
// with a document due in a minute.
func fullSources(t *testing.T) Sources {
	t.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	store, err := docstore.Open(eng, docstore.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.CreateCollection("d", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 60}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		t.Fatal(err)
	}
	d, err := docstore.PrepareInsert(bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: bson.NewDateTimeFromTime(clk.Now())}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(d, docstore.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ops := opstats.New()
	ops.Record("ping", "", time.Millisecond, false, false)
	return Sources{
		Ops: ops, Server: func() server.Stats { return server.Stats{} }, Storage: eng.Metrics,
		Expiry: expirywatch.New(store, clk, nil), TTLPasses: func() int64 { return 1 },
	}
}
