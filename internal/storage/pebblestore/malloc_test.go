package pebblestore

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/internal/diag"
)

// TestFlushedMemTablesLeaveMemory writes enough to fill and flush several
// memtables, faster than they flush, and checks that once the flushes
// are done the process holds no more memory outside the Go runtime than
// the memtables pebble keeps (the active one and one kept for reuse) and
// a margin. With cgo, memtables are C allocations: glibc kept the freed
// ones resident (returnFreedMemTables); without cgo they are Go garbage,
// outside what this counts. It runs in a process of its own, so that
// what the package's other tests left in C's heap does not hide growth.
func TestFlushedMemTablesLeaveMemory(t *testing.T) {
	if os.Getenv(memTablesChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFlushedMemTablesLeaveMemory$", "-test.v")
		cmd.Env = append(os.Environ(), memTablesChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a process of its own:\n%s", out)
		if err != nil {
			t.Fatalf("the test's own process failed: %v", err)
		}
		return
	}
	s, err := Open(Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := residentOutsideGo(t)
	const memTables = 16
	writeFast(t, s, memTables*memTableSize)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// A compaction's replaced version stays pinned, with the memtables it
	// reads, for a short hold (pin.go): those are freed when it ends.
	waitPinsReleased(t, s)
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

// memTablesChild marks the process TestFlushedMemTablesLeaveMemory runs
// itself in.
const memTablesChild = "MAYFLY_TEST_MEMTABLES_CHILD"

// writeFast writes n bytes of session-sized entries from eight writers in
// large batches, so that memtables fill faster than they flush and queue
// up, as under a bulk load.
func writeFast(t *testing.T, s *Store, n int) {
	t.Helper()
	const writers, perBatch, valueSize = 8, 1000, 100
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

// residentOutsideGo is the process's resident memory less what the Go
// runtime holds of its own mappings, after giving back what it can.
func residentOutsideGo(t *testing.T) int64 {
	t.Helper()
	debug.FreeOSMemory()
	rss := diag.ResidentBytes()
	if rss == 0 {
		t.Fatal("no VmRSS in /proc/self/status")
	}
	return rss - diag.GoResident()
}
