package docstore

import (
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// writeCounter counts the records (sets and deletes) and their bytes
// (keys and values) that commit to the engine beneath the change log, so
// a benchmark sees every record a write costs, its change event's too.
type writeCounter struct {
	records, bytes atomic.Int64
}

// report adds the counts per operation to b's results.
func (w *writeCounter) report(b *testing.B) {
	b.ReportMetric(float64(w.records.Load())/float64(b.N), "records/op")
	b.ReportMetric(float64(w.bytes.Load())/float64(b.N), "wbytes/op")
}

func (w *writeCounter) reset() { w.records.Store(0); w.bytes.Store(0) }

// writeCountingEngine is a storage engine whose batches tell a writeCounter
// what they commit.
type writeCountingEngine struct {
	storage.Engine
	w *writeCounter
}

func (e *writeCountingEngine) NewBatch() storage.Batch {
	return &writeCountingBatch{Batch: e.Engine.NewBatch(), w: e.w}
}

type writeCountingBatch struct {
	storage.Batch
	w              *writeCounter
	records, bytes int64
}

func (b *writeCountingBatch) Set(key, value []byte) error {
	b.records++
	b.bytes += int64(len(key) + len(value))
	return b.Batch.Set(key, value)
}

func (b *writeCountingBatch) Delete(key []byte) error {
	b.records++
	b.bytes += int64(len(key))
	return b.Batch.Delete(key)
}

func (b *writeCountingBatch) Commit(sync bool) error {
	if err := b.Batch.Commit(sync); err != nil {
		return err
	}
	b.w.records.Add(b.records)
	b.w.bytes.Add(b.bytes)
	b.records, b.bytes = 0, 0
	return nil
}

// openCountingStore is openStoreLog whose engine counts what commits.
func openCountingStore(t testing.TB, logged bool) (*Store, *writeCounter) {
	t.Helper()
	clk := clock.NewManual(t0)
	resident := rescache.New(testCacheBytes, clk)
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Resident: resident})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	w := &writeCounter{}
	wrapped, err := changestream.NewEngine(&writeCountingEngine{Engine: eng, w: w}, clk, changestream.NewSignal())
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
	return s, w
}
