package pebblestore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Every write to a file the storage engine makes yields first, but for
// the WAL's and the MANIFEST's: counted under yieldFS over commits with and
// without sync, flushes and a compaction, every kind of file pebble
// writes, by the category it creates the file with.
func TestBackgroundWritesYield(t *testing.T) {
	var yields atomic.Int64
	rec := &recordingFS{FS: vfs.Default, writes: map[string]int{}, categories: map[string]bool{}}
	s := openT(t, Options{Dir: t.TempDir(), FS: rec, Yield: func() { yields.Add(1) }, SyncInterval: -1})
	defer s.Close()
	for round := range 3 {
		for i := range 300 {
			// The same keys each round: tables that overlap, which a
			// compaction rewrites rather than moves.
			if err := set(t, s, i%50 == 0, fmt.Sprintf("k%04d", i), fmt.Sprintf("value %d", round)); err != nil {
				t.Fatal(err)
			}
		}
		mustDo(t, s.Flush())
	}
	mustDo(t, s.dbT(t).Compact(context.Background(), []byte("k"), []byte("l"), true))
	mustDo(t, s.Close())

	rec.mu.Lock()
	defer rec.mu.Unlock()
	background, foreground := 0, 0
	for name, n := range rec.writes {
		if critical(name) {
			foreground += n
		} else {
			background += n
		}
	}
	if foreground == 0 || background == 0 {
		t.Fatalf("writes: %d to the WAL and the MANIFEST, %d to other files; want some of each", foreground, background)
	}
	if got := yields.Load(); got != int64(background) {
		t.Errorf("%d yields for %d writes to files but the WAL and the MANIFEST", got, background)
	}
	for _, c := range []string{"pebble-memtable-flush", "pebble-compaction"} {
		if !rec.categories[c] {
			t.Errorf("no file created as %q: the test made no such write (created: %v)", c, rec.categories)
		}
	}
}

// In memory, a flush's writes yield too.
func TestBackgroundWritesYieldInMemory(t *testing.T) {
	var yields atomic.Int64
	s := openT(t, Options{InMemory: true, Yield: func() { yields.Add(1) }})
	defer s.Close()
	mustDo(t, set(t, s, false, "k", "v"))
	before := yields.Load()
	mustDo(t, s.Flush())
	if yields.Load() == before {
		t.Fatal("a flush in memory did not yield")
	}
}

// recordingFS counts the writes to each file (by base name) and the
// categories files were created with.
type recordingFS struct {
	vfs.FS
	mu         sync.Mutex
	writes     map[string]int
	categories map[string]bool
}

func (fs *recordingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	fs.mu.Lock()
	fs.categories[string(category)] = true
	fs.mu.Unlock()
	return fs.wrap(name, f, err)
}

func (fs *recordingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

func (fs *recordingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &recordingFile{File: f, fs: fs, name: fs.PathBase(name)}, nil
}

type recordingFile struct {
	vfs.File
	fs   *recordingFS
	name string
}

func (f *recordingFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes[f.name]++
	f.fs.mu.Unlock()
	return f.File.Write(p)
}

func (s *Store) dbT(t *testing.T) *pebble.DB {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	mustDo(t, err)
	return db
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
