package storagetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// RunBenchmarks runs the shared engine benchmarks. open must return a fresh,
// empty engine; the benchmarks close it.
func RunBenchmarks(b *testing.B, open func(b *testing.B) storage.Engine) {
	value := make([]byte, 200) // a small document
	withEngine := func(name string, fn func(*testing.B, storage.Engine)) {
		b.Run(name, func(b *testing.B) {
			e := open(b)
			defer e.Close()
			fn(b, e)
		})
	}
	withEngine("SetNoSync", func(b *testing.B, e storage.Engine) {
		for i := 0; b.Loop(); i++ {
			if err := commitOne(e, false, fmt.Appendf(nil, "k%010d", i), value); err != nil {
				b.Fatal(err)
			}
		}
	})
	withEngine("Batch100NoSync", func(b *testing.B, e storage.Engine) {
		for i := 0; b.Loop(); i++ {
			bt := e.NewBatch()
			for j := range 100 {
				_ = bt.Set(fmt.Appendf(nil, "k%010d-%03d", i, j), value)
			}
			if err := bt.Commit(false); err != nil {
				b.Fatal(err)
			}
			_ = bt.Close()
		}
	})
	withEngine("Get", func(b *testing.B, e storage.Engine) {
		fill(b, e, 10000, value)
		for i := 0; b.Loop(); i++ {
			if _, err := e.Get(fmt.Appendf(nil, "k%010d", i%10000)); err != nil {
				b.Fatal(err)
			}
		}
	})
	withEngine("Scan1000", func(b *testing.B, e storage.Engine) {
		fill(b, e, 1000, value)
		for b.Loop() {
			it, err := e.NewIter(nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
			}
			_ = it.Close()
		}
	})
	for _, g := range []int{1, 8, 64} {
		withEngine(fmt.Sprintf("CommitSync/goroutines=%d", g), func(b *testing.B, e storage.Engine) {
			benchSyncCommits(b, e, g, value)
		})
	}
}

func commitOne(e storage.Engine, sync bool, key, value []byte) error {
	bt := e.NewBatch()
	defer bt.Close()
	if err := bt.Set(key, value); err != nil {
		return err
	}
	return bt.Commit(sync)
}

func fill(b *testing.B, e storage.Engine, n int, value []byte) {
	bt := e.NewBatch()
	for i := range n {
		_ = bt.Set(fmt.Appendf(nil, "k%010d", i), value)
	}
	if err := bt.Commit(false); err != nil {
		b.Fatal(err)
	}
	_ = bt.Close()
}

// benchSyncCommits shares b.N durable single-key commits among g goroutines
// and reports commits/s, which shows how well the engine groups fsyncs.
func benchSyncCommits(b *testing.B, e storage.Engine, g int, value []byte) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := commitOne(e, true, fmt.Appendf(nil, "k%010d", i), value); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark goroutine
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}
