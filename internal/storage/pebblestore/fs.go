package pebblestore

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// watchFS reports write and sync failures on the WAL and the MANIFEST, which
// pebble cannot recover from without reopening. pebble itself notices a WAL
// write error only when a later sync waits on it, and a commit entering its
// pipeline after that point panics while holding the commit mutex; flagging
// the failure at the failing call shuts new commits out before that.
// Other files (sstables) are left to pebble, which retries flushes and
// compactions.
type watchFS struct {
	vfs.FS
	onFailure func(error)
}

func (fs *watchFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.watch(name, f, err)
}

func (fs *watchFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.watch(newname, f, err)
}

func (fs *watchFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.watch(name, f, err)
}

// Unwrap implements vfs.FS.
func (fs *watchFS) Unwrap() vfs.FS { return fs.FS }

func (fs *watchFS) watch(name string, f vfs.File, err error) (vfs.File, error) {
	if !critical(fs.PathBase(name)) {
		return f, err
	}
	if err != nil {
		fs.onFailure(fmt.Errorf("create failed: %w", err))
		return f, err
	}
	return &watchFile{File: f, onFailure: fs.onFailure}, nil
}

// critical reports whether a file is one whose loss of a write pebble
// treats as fatal: WAL segments and the MANIFEST.
func critical(base string) bool {
	return strings.HasSuffix(base, ".log") || strings.HasPrefix(base, "MANIFEST-")
}

type watchFile struct {
	vfs.File
	onFailure func(error)
}

func (f *watchFile) check(op string, err error) {
	if err != nil {
		f.onFailure(fmt.Errorf("%s failed: %w", op, err))
	}
}

func (f *watchFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.check("write", err)
	return n, err
}

func (f *watchFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.check("write", err)
	return n, err
}

func (f *watchFile) Sync() error {
	err := f.File.Sync()
	f.check("sync", err)
	return err
}

func (f *watchFile) SyncData() error {
	err := f.File.SyncData()
	f.check("sync", err)
	return err
}

func (f *watchFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	f.check("sync", err)
	return full, err
}

// yieldFS makes flushes and compactions give way to requests: their
// writers yield the thread before each write to the files they make
// (every file but the WAL and the MANIFEST; bufio's 4 KiB at a time, tens
// of microseconds of their work apart). With one scheduler thread per
// core Go preempts a goroutine only after 10 ms, and a compaction that ran
// that long on the one thread of a core held every request on it, in the
// tail of the sessions' latency (docs/design/0002, "Background work and
// the scheduler"). The WAL's writer is left alone: commits wait on it.
type yieldFS struct {
	vfs.FS
	yield func()
}

func (fs yieldFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || critical(fs.PathBase(name)) {
		return f, err
	}
	return yieldingFile{File: f, yield: fs.yield}, nil
}

// Unwrap implements vfs.FS.
func (fs yieldFS) Unwrap() vfs.FS { return fs.FS }

type yieldingFile struct {
	vfs.File
	yield func()
}

func (f yieldingFile) Write(p []byte) (int, error) {
	f.yield()
	return f.File.Write(p)
}
