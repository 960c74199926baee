package docstore

import (
	"syscall"
	"time"
	"unsafe"
)

// benchThreadCPU is the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID), as the TTL monitor paces itself by: a
// benchmark locked to its thread reports its own work, not the
// background flushes and compactions nor the time it waited for a CPU.
func benchThreadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
