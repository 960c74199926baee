// Package faultfs holds filesystem fault injectors for pebble's errorfs,
// shared by the storage engine's tests and the server's integration tests.
package faultfs

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// DiskFull fails every data-writing filesystem operation with ENOSPC while
// on, like a full disk. Reads, renames and removals still work, as they do
// on a real full disk. Use it with errorfs.Wrap; it is safe for concurrent
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
