//go:build !cgo

package diag

// StorageOffGoHeap: without cgo, pebble's block cache and memtables are Go
// allocations, counted in the Go heap.
const StorageOffGoHeap = false
