package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

const batchKeys = 5

func batchKey(i, j int) []byte { return fmt.Appendf(nil, "b%04d/k%d", i, j) }

// writeBatches commits n batches of batchKeys keys each, a random quarter of
// them with sync, and returns the index of the last synced batch (-1 if
// none).
func writeBatches(t *testing.T, s *Store, rng *rand.Rand, n int) int {
	t.Helper()
	lastSynced := -1
	for i := range n {
		sync := rng.IntN(4) == 0
		b := s.NewBatch()
		for j := range batchKeys {
			if err := b.Set(batchKey(i, j), fmt.Appendf(nil, "value-%d-%d-%s", i, j, strings.Repeat("x", rng.IntN(300)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(sync); err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		if sync {
			lastSynced = i
		}
	}
	return lastSynced
}

// presentBatches checks that every batch is wholly present or wholly absent
// and returns how many leading batches are present; it fails if a batch is
// present after an absent one (the WAL is replayed in order, so surviving
// batches must form a prefix).
func presentBatches(t *testing.T, s *Store, n int) int {
	t.Helper()
	prefix := -1
	for i := range n {
		count := 0
		for j := range batchKeys {
			if _, err := s.Get(batchKey(i, j)); err == nil {
				count++
			}
		}
		switch {
		case count != 0 && count != batchKeys:
			t.Fatalf("batch %d is torn: %d of %d keys survived", i, count, batchKeys)
		case count == 0 && prefix < 0:
			prefix = i
		case count == batchKeys && prefix >= 0:
			t.Fatalf("batch %d survived but batch %d did not", i, prefix)
		}
	}
	if prefix < 0 {
		return n
	}
	return prefix
}

// TestCrashRecovery takes crash images of a store mid-workload, keeping a
// varying share of unsynced writes, and checks recovery: every synced batch
// is there whole, no batch is half there.
func TestCrashRecovery(t *testing.T) {
	const n = 150
	for _, pct := range []int{0, 30, 70, 100} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("unsynced=%d%%/seed=%d", pct, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(pct)))
				mem := vfs.NewCrashableMem()
				s := openT(t, Options{Dir: "db", FS: mem, SyncInterval: -1})
				lastSynced := writeBatches(t, s, rng, n)
				crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng})
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}

				r := openT(t, Options{Dir: "db", FS: crashed, SyncInterval: -1})
				defer r.Close()
				got := presentBatches(t, r, n)
				if got <= lastSynced {
					t.Fatalf("batch %d was committed with sync but only %d batches survived", lastSynced, got)
				}
				if pct == 0 && got != lastSynced+1 {
					t.Fatalf("with no unsynced data kept, %d batches survived; want exactly %d", got, lastSynced+1)
				}
				// The recovered store takes writes.
				if err := set(t, r, true, "after-crash", "v"); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestUnsyncedCommitsBecomeDurable: NoSync commits survive a crash once the
// background syncer has run, or after an explicit Sync.
func TestUnsyncedCommitsBecomeDurable(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("explicitSync=%v", explicit), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			interval := 20 * time.Millisecond
			if explicit {
				interval = -1
			}
			s := openT(t, Options{Dir: "db", FS: mem, SyncInterval: interval})
			defer s.Close()
			if err := set(t, s, false, "k", "v"); err != nil {
				t.Fatal(err)
			}
			if explicit {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			} else {
				time.Sleep(10 * interval)
			}
			r := openT(t, Options{Dir: "db", FS: mem.CrashClone(vfs.CrashCloneCfg{}), SyncInterval: -1})
			defer r.Close()
			if _, err := r.Get([]byte("k")); err != nil {
				t.Fatalf("unsynced commit lost after crash: %v", err)
			}
		})
	}
}

// TestGroupCommit makes each WAL sync take 1ms and checks that concurrent
// sync commits share syncs, while a single committer pays one sync each.
func TestGroupCommit(t *testing.T) {
	var syncs atomic.Int64
	slowSync := errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if strings.HasSuffix(op.Path, ".log") {
				syncs.Add(1)
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	})
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), slowSync), SyncInterval: -1})
	defer s.Close()

	run := func(goroutines, perG int) (commits int, perSync float64, rate float64) {
		before := syncs.Load()
		start := time.Now()
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					if err := set(t, s, true, fmt.Sprintf("g%d-%d", g, i), "v"); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		commits = goroutines * perG
		return commits, float64(commits) / float64(syncs.Load()-before), float64(commits) / time.Since(start).Seconds()
	}
	_, one, oneRate := run(1, 50)
	_, many, manyRate := run(64, 10)
	t.Logf("1 goroutine: %.1f commits/sync, %.0f commits/s; 64 goroutines: %.1f commits/sync, %.0f commits/s",
		one, oneRate, many, manyRate)
	if one > 1.5 {
		t.Errorf("a lone committer shared syncs (%.1f commits/sync): syncs are not per commit", one)
	}
	if many < 4 {
		t.Errorf("64 concurrent committers got only %.1f commits per WAL sync; want grouping", many)
	}
}
