package ttl

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// threadCPU returns the CPU time the calling OS thread has used. The
// monitor locks its goroutine to one thread, so differences of this clock
// are the monitor's own work, without the time it waited for a CPU.
func threadCPU() (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// catchUpNice is the nice value of the monitor's thread while it catches
// up: a weight about three times a default thread's, so that the kernel
// gives deletion a bigger share of a saturated machine for as long as it
// is behind a storm it can outrun.
const catchUpNice = -5

// threadPriority raises the calling OS thread's priority to catchUpNice
// (up) or sets it back to the default. It reports whether the system
// allowed it: raising needs CAP_SYS_NICE or a RLIMIT_NICE that permits it.
func threadPriority(up bool) bool {
	nice := 0
	if up {
		nice = catchUpNice
	}
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice) == nil
}
