//go:build cgo && linux

package pebblestore

/*
#include <malloc.h>
*/
import "C"

// mmapThreshold is the size from which C's allocator maps an allocation
// of its own, which free gives back to the system at once: glibc's
// starting value, kept.
const mmapThreshold = 128 << 10

// returnFreedMemTables fixes C's mmap threshold. Built with cgo, pebble
// allocates each memtable (16 MiB) with calloc. glibc's threshold is
// dynamic: once a mapped block is freed, it rises to that block's size,
// and from then on memtables come from the heap, whose freed space
// glibc keeps. A server that flushed a few memtables under a load kept
// 16 to 48 MiB of them resident, idle, for good (docs/design/0005,
// "Memory: memtables and the resident cache"). Setting the threshold
// ends the adjustment: every memtable is a mapping of its own, returned
// when pebble frees it.
func returnFreedMemTables() {
	C.mallopt(C.M_MMAP_THRESHOLD, mmapThreshold)
}
