package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openT(t testing.TB, opt Options) *Store {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = quietLogger()
	}
	s, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceOnDisk(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Engine {
		return openT(t, Options{Dir: t.TempDir()})
	})
}

func TestConformanceInMemory(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Engine {
		return openT(t, Options{InMemory: true})
	})
}

func BenchmarkOnDisk(b *testing.B) {
	storagetest.RunBenchmarks(b, func(b *testing.B) storage.Engine {
		return openT(b, Options{Dir: b.TempDir()})
	})
}

func BenchmarkInMemory(b *testing.B) {
	storagetest.RunBenchmarks(b, func(b *testing.B) storage.Engine {
		return openT(b, Options{InMemory: true})
	})
}

func set(t testing.TB, s storage.Engine, sync bool, kv ...string) error {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := b.Set([]byte(kv[i]), []byte(kv[i+1])); err != nil {
			return err
		}
	}
	return b.Commit(sync)
}

func TestReopenKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "db") // Open creates missing parents
	s := openT(t, Options{Dir: dir})
	for i := range 100 {
		if err := set(t, s, i%10 == 0, fmt.Sprintf("k%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, Options{Dir: dir})
	defer s.Close()
	for i := range 100 {
		if _, err := s.Get(fmt.Appendf(nil, "k%03d", i)); err != nil {
			t.Fatalf("k%03d after reopen: %v", i, err)
		}
	}
}

func TestMetrics(t *testing.T) {
	disk := openT(t, Options{Dir: t.TempDir()})
	defer disk.Close()
	mem := openT(t, Options{InMemory: true})
	defer mem.Close()
	for _, s := range []*Store{disk, mem} {
		for i := range 200 {
			if err := set(t, s, false, fmt.Sprintf("k%04d", i), "a small document"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := disk.Metrics(); m.DiskBytes <= 0 || m.MemBytes <= 0 {
		t.Errorf("on disk: %+v, want both positive", m)
	}
	if m := mem.Metrics(); m.DiskBytes != 0 || m.MemBytes <= 0 {
		t.Errorf("in memory: %+v, want DiskBytes 0 and MemBytes positive", m)
	}
}

func TestOpenNeedsDir(t *testing.T) {
	if _, err := Open(Options{Logger: quietLogger()}); err == nil {
		t.Fatal("Open without Dir succeeded")
	}
}

func TestDeleteRangeNeedsEnd(t *testing.T) {
	s := openT(t, Options{InMemory: true})
	defer s.Close()
	b := s.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte("a"), nil); err == nil {
		t.Fatal("DeleteRange with nil end succeeded")
	}
}

func TestBatchIsSingleUse(t *testing.T) {
	s := openT(t, Options{InMemory: true})
	defer s.Close()
	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); !errors.Is(err, errBatchUsed) {
		t.Fatalf("second Commit: %v", err)
	}
	if err := b.Set([]byte("b"), []byte("2")); !errors.Is(err, errBatchUsed) {
		t.Fatalf("Set after Commit: %v", err)
	}
}

// TestPanicDuringCommit: a pebble panic inside a write (how pebble reports
// a WAL error to a commit already in its pipeline) becomes an error, stops
// further writes, and Close returns instead of waiting on pebble's commit
// mutex.
func TestPanicDuringCommit(t *testing.T) {
	s := openT(t, Options{InMemory: true})
	err := s.pebbleWrite(func() error { panic("injected") })
	if !errors.Is(err, storage.ErrWriteFailed) {
		t.Fatalf("pebbleWrite after panic: %v", err)
	}
	if err := set(t, s, false, "a", "1"); !errors.Is(err, storage.ErrWriteFailed) {
		t.Fatalf("commit after panic: %v", err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close after a commit panic reported success")
	}
	_ = s.db.Close() // this pebble is not really wedged; release it
}

// The change log and the raft log are appended in key order beside
// documents written anywhere; tables of their own let them move down the
// levels instead of being rewritten with the documents.
func TestTablesKeepToOneTag(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir()})
	defer s.Close()
	for round := range 3 {
		for i := range 300 {
			for _, tag := range []string{"d", "e", "i"} {
				if err := set(t, s, false, fmt.Sprintf("%s%02d%04d", tag, round, i), "a value"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.RLock()
	db, err := s.dbLocked()
	s.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte("a"), []byte("z"), true); err != nil {
		t.Fatal(err)
	}
	levels, err := db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for level, infos := range levels {
		for _, info := range infos {
			tables++
			if lo, hi := info.Smallest.UserKey, info.Largest.UserKey; lo[0] != hi[0] {
				t.Errorf("L%d: a table spans %q to %q", level, lo, hi)
			}
		}
	}
	if tables < 3 {
		t.Errorf("%d tables for three tags", tables)
	}
}

func TestSplitAtTagsEnds(t *testing.T) {
	for _, c := range []struct{ start, end string }{
		{"", "\x00"}, {"d\x00\x01", "e"}, {"e", "f"}, {"\xfe\xff", "\xff"}, {"\xff\x00", ""},
	} {
		_, end, err := splitAtTags([]byte(c.start))
		if err != nil || string(end) != c.end {
			t.Errorf("splitAtTags(%q) ends at %q (%v), want %q", c.start, end, err, c.end)
		}
	}
}

// TestConformanceWithResidentCache runs the suite with every value cached
// and every two-byte prefix a cacheable range: the cache must not change
// what any read sees.
func TestConformanceWithResidentCache(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Engine {
		return openT(t, Options{InMemory: true, Resident: admitAll()})
	})
}

func admitAll() *rescache.Cache {
	c := rescache.New(1<<20, nil)
	c.SetPolicy(rescache.Policy{
		Admit: func([]byte) bool { return true },
		EqualityLen: func(key []byte) (int, bool) {
			return 2, len(key) >= 2
		},
	})
	return c
}
