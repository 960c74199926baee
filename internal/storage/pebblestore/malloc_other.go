//go:build !cgo || !linux

package pebblestore

// returnFreedMemTables has nothing to do: without cgo, pebble's memtables
// are Go allocations, which the collector frees and the server gives back
// (server.memoryReturner); elsewhere than Linux, C's allocator is not
// glibc's.
func returnFreedMemTables() {}
