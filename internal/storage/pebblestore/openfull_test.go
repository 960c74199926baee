package pebblestore

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// reportedFree is the real disk, reporting as free the bytes it is told
// to: the filesystem's count that roomToOpen weighs first.
type reportedFree struct {
	vfs.FS
	avail atomic.Uint64
}

func (fs *reportedFree) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	usage, err := fs.FS.GetDiskUsage(path)
	usage.AvailBytes = fs.avail.Load()
	return usage, err
}

// TestOpenWithoutRoomIsReadOnly: a store whose disk reports less free
// space than a read-write open writes (here the probe's margin, short of
// the WAL to replay) opens read-only, serving what the WAL holds and
// refusing writes with ENOSPC, and reopens for writing once the room is
// there.
func TestOpenWithoutRoomIsReadOnly(t *testing.T) {
	dir := t.TempDir()
	fs := &reportedFree{FS: vfs.Default}
	fs.avail.Store(math.MaxUint64)
	s := openT(t, Options{Dir: dir, FS: fs, RecoverInterval: -1})
	if err := set(t, s, true, "kept", "v"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	fs.avail.Store(probeSize)
	s = openT(t, Options{Dir: dir, FS: fs, RecoverInterval: testRecoverInterval})
	defer s.Close()
	hooks := countHooks(s)
	if s.Writable() {
		t.Fatal("opened for writing with no room for the open's writes")
	}
	if v, err := s.Get([]byte("kept")); err != nil || string(v) != "v" {
		t.Fatalf("Get on the read-only open: %q, %v", v, err)
	}
	wantWriteFailure(t, "commit on the read-only open", set(t, s, true, "refused", "v"))

	fs.avail.Store(math.MaxUint64)
	waitFor(t, "the reopen for writing", func() bool { return hooks.Load() == 1 })
	if err := set(t, s, true, "after", "v"); err != nil {
		t.Fatalf("commit after the reopen: %v", err)
	}
	if v, err := s.Get([]byte("kept")); err != nil || string(v) != "v" {
		t.Fatalf("Get after the reopen: %q, %v", v, err)
	}
}
