package pebblestore

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// BenchmarkUnsyncedCommitGuard is an unsynced commit of one 200-byte value
// from 16 writers, with and without a guard snapshot around it, as a
// durable commit takes (durable.go): what unsynced commits save by taking
// none.
func BenchmarkUnsyncedCommitGuard(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		name := "bare"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			s := openT(b, Options{Dir: b.TempDir()})
			defer s.Close()
			var next atomic.Uint64
			val := make([]byte, 200)
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bt := s.db.NewBatch()
					_ = bt.Set(binary.BigEndian.AppendUint64(nil, next.Add(1)), val, nil)
					var g *guard
					if guarded {
						g = s.takeGuard(s.db)
					}
					if err := s.db.Apply(bt, pebble.NoSync); err != nil {
						b.Error(err)
					}
					if guarded {
						s.release(g)
					}
					_ = bt.Close()
				}
			})
		})
	}
}
