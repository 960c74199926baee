package docstore

import (
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
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
	w := &writeCounter{}
	s, _ := openStoreOn(t, logged, testCacheBytes, func(e storage.Engine) storage.Engine {
		return &writeCountingEngine{Engine: e, w: w}
	})
	return s, w
}
