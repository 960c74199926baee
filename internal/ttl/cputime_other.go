//go:build !linux

package ttl

import "time"

// threadCPU is unavailable here; the monitor paces by wall time instead.
func threadCPU() (time.Duration, bool) { return 0, false }

// threadPriority is unavailable here: the monitor catches up at the
// default priority.
func threadPriority(up bool) bool { return false }
