package pebblestore

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestFlushedMemTablesLeaveMemory writes enough to fill and flush several
// memtables, faster than they flush, and checks that once the flushes
// are done the process holds no more memory outside the Go runtime than
// the memtables pebble keeps (the active one and one kept for reuse) and
// a margin. With cgo, memtables are C allocations: glibc kept the freed
// ones resident (returnFreedMemTables); without cgo they are Go garbage,
// outside what this counts.
func TestFlushedMemTablesLeaveMemory(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := residentOutsideGo(t)
	const memTables = 8
	writeFast(t, s, memTables*memTableSize)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := s.db.Metrics()
	t.Logf("%d flushes, %d write stalls", m.Flush.Count, s.stalls.Load())
	grown := residentOutsideGo(t) - before
	const margin = 8 << 20 // code run for the first time, pebble's other C allocations
	limit := int64(2*memTableSize + margin)
	t.Logf("outside the Go heap: %d MiB before, grew %d MiB (limit %d MiB)", before>>20, grown>>20, limit>>20)
	if grown > limit {
		t.Errorf("memory outside the Go runtime grew by %d MiB after filling %d memtables; at most %d MiB expected", grown>>20, memTables, limit>>20)
	}
}

// writeFast writes n bytes of session-sized entries from four writers in
// large batches, so that memtables fill faster than they flush and queue
// up, as under a bulk load.
func writeFast(t *testing.T, s *Store, n int) {
	t.Helper()
	const writers, perBatch, valueSize = 4, 1000, 100
	val := make([]byte, valueSize)
	_, _ = rand.Read(val)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < n/writers/valueSize; i += perBatch {
				b := s.NewBatch()
				for range perBatch {
					_ = b.Set(binary.BigEndian.AppendUint64([]byte{byte(w)}, mrand.Uint64()), val)
				}
				if err := b.Commit(false); err != nil {
					t.Error(err)
				}
				_ = b.Close()
			}
		})
	}
	wg.Wait()
}

// residentOutsideGo is the process's resident memory (VmRSS) less what the
// Go runtime holds of its own mappings.
func residentOutsideGo(t *testing.T) int64 {
	t.Helper()
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	goResident := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	rss, err := vmRSS()
	if err != nil {
		t.Fatal(err)
	}
	return rss - goResident
}

func vmRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}
