package repl

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// BenchmarkProposeDisk measures proposals from 64 writers through three
// in-process members whose engines sync to disk: the cost of the raft
// glue itself, without the network or the docstore. The log keeps the
// server's default retention, so followers never need a snapshot.
func BenchmarkProposeDisk(b *testing.B) { benchmarkPropose(b, 64) }

// BenchmarkProposeDisk4 is BenchmarkProposeDisk with 4 writers (the
// bench's loaders): each write's latency, more than the batching, counts.
func BenchmarkProposeDisk4(b *testing.B) { benchmarkPropose(b, 4) }

func benchmarkPropose(b *testing.B, writers int) {
	c := newClusterOn(b, defaultRetainEntries, func() *pebblestore.Store {
		s, err := pebblestore.Open(pebblestore.Options{Dir: b.TempDir(), FS: vfs.Default, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
	l := c.leader()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/writers + 1
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := proposeSet(l, fmt.Sprintf("d%d-%d", w, i), make([]byte, 200)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "writes/s")
}

// proposeSet proposes one write of key through leader l.
func proposeSet(l *node, key string, value []byte) error {
	bt := l.base.NewBatch()
	defer bt.Close()
	if err := bt.Set([]byte(key), value); err != nil {
		return err
	}
	repr, err := bt.(storage.Encodable).Repr()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.propose(ctx, &entry{kind: kindWrite, payload: repr})
}
