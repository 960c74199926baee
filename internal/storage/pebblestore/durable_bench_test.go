package pebblestore

import (
	"encoding/binary"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
)

// BenchmarkJournaledCommit is a j: true write as the docstore makes it: a
// commit in two steps (CommitNoWait, then its wait), from 16 writers at
// once (pebble groups their syncs). It measures what the durable view's
// guards cost per durable write.
func BenchmarkJournaledCommit(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Uint64
	val := make([]byte, 200)
	b.SetParallelism(8) // 16 writers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bt := s.NewBatch()
			_ = bt.Set(binary.BigEndian.AppendUint64(nil, next.Add(1)), val)
			wait, err := bt.(storage.GroupCommit).CommitNoWait()
			if err == nil {
				err = wait()
			}
			if err != nil {
				b.Error(err)
			}
			_ = bt.Close()
		}
	})
}
