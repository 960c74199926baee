package changestream

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// BenchmarkEngineCommit measures concurrent writers committing a batch
// with one event each through the standalone Engine, the log on: a
// session-sized document and its insert event, on a store on disk with a
// WAL. It shows what the stamp's mutex costs writers that would otherwise
// commit side by side.
func BenchmarkEngineCommit(b *testing.B) {
	for _, durable := range []bool{false, true} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) { benchEngineCommit(b, durable, true) })
	}
	// The log off (a standalone before its first stream): the event is
	// dropped, the batch commits as it would without the Engine.
	b.Run("nolog", func(b *testing.B) { benchEngineCommit(b, false, false) })
}

func benchEngineCommit(b *testing.B, durable, logged bool) {
	base, err := pebblestore.Open(pebblestore.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = base.Close() })
	eng, err := NewEngine(base, clock.NewManual(time.Unix(1000, 0)), NewSignal())
	if err == nil && logged {
		err = eng.Record()
	}
	if err != nil {
		b.Fatal(err)
	}
	doc := make([]byte, 200)
	var n atomic.Int64
	b.SetParallelism(4) // 4 writers per core, as server connections
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Appendf(nil, "d%012d", n.Add(1))
			batch := eng.NewBatch()
			if err := batch.Set(key, doc); err != nil {
				b.Error(err)
				return
			}
			batch.(EventBatch).AddEvent((&Event{Op: OpInsert, DB: "db", Coll: "s", Doc: doc}).Encode(nil))
			err := batch.Commit(durable)
			_ = batch.Close()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
