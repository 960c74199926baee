//go:build cgo

package commands

// storageOffGoHeap: with cgo, pebble allocates its block cache and
// memtables with C's allocator.
const storageOffGoHeap = true
