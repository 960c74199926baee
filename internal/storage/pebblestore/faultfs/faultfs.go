// Package faultfs holds filesystem fault injectors for pebble's errorfs,
// shared by the storage engine's tests and the server's integration tests.
package faultfs

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// DiskFull fails every data-writing filesystem operation with ENOSPC while
// on, like a full disk. Reads, renames and removals still work, as they do
// on a real full disk. Use it with Wrap; it is safe for concurrent
// use.
type DiskFull struct {
	on    atomic.Bool
	fails atomic.Int64
}

var _ errorfs.Injector = (*DiskFull)(nil)

// Set turns the fault on (disk full) or off (space is back).
func (d *DiskFull) Set(full bool) { d.on.Store(full) }

// Fails reports how many operations the fault has failed so far.
func (d *DiskFull) Fails() int64 { return d.fails.Load() }

// String implements errorfs.Injector.
func (d *DiskFull) String() string { return "diskFull" }

// MaybeError implements errorfs.Injector.
func (d *DiskFull) MaybeError(op errorfs.Op) error {
	if !d.on.Load() || !writes(op.Kind) {
		return nil
	}
	d.fails.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func writes(k errorfs.OpKind) bool {
	switch k {
	case errorfs.OpCreate, errorfs.OpReuseForWrite, errorfs.OpFileWrite, errorfs.OpFileWriteAt,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFilePreallocate:
		return true
	}
	return false
}

// Wrap is errorfs.Wrap with files reused for writing (pebble's recycled
// WAL files) injected into like every other file: errorfs hands those back
// unwrapped, so after its first WAL recycling a store wrapped by errorfs
// alone writes and syncs its WAL on a "full" disk.
func Wrap(fs vfs.FS, inj errorfs.Injector) vfs.FS {
	return &reuseInjected{FS: errorfs.Wrap(fs, inj), inj: inj}
}

type reuseInjected struct {
	*errorfs.FS
	inj errorfs.Injector
}

// ReuseForWrite renames the old file and opens it for writing through the
// injecting FS, so its writes and syncs can fail.
func (r *reuseInjected) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := r.inj.MaybeError(errorfs.Op{Kind: errorfs.OpReuseForWrite, Path: oldname}); err != nil {
		return nil, err
	}
	if err := r.FS.Rename(oldname, newname); err != nil {
		return nil, err
	}
	return r.FS.OpenReadWrite(newname, category)
}
