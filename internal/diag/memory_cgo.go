//go:build cgo

package diag

// StorageOffGoHeap: with cgo, pebble allocates its block cache and
// memtables with C's allocator.
const StorageOffGoHeap = true
