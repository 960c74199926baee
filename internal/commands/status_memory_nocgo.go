//go:build !cgo

package commands

// storageOffGoHeap: without cgo, pebble's block cache and memtables are Go
// allocations, counted in the Go heap.
const storageOffGoHeap = false
